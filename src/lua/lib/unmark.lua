-- unmark(v): K's value v without the mark that redlock stop appends to
-- an exclusive holder's token ('\0stop': no token given in argv can
-- hold its NUL byte), and whether it had it.
local function unmark(v)
  if v and string.sub(v, -5) == '\0stop' then
    return string.sub(v, 1, -6), true
  end
  return v, false
end
