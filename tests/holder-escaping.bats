#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# What a holder recorded is printed escaped (the verbs in redlock(1)):
# `status` and `list` print the holder's user, host and command with
# control characters escaped, so that one lock is one line and nothing
# reaches the operator's terminal as an escape sequence; --json stays
# valid JSON with the exact values.  A host name cannot be set by a test,
# so the holder record is also written directly (K "\0holder", see
# src/proto.c).

load helpers

lifecycle main

EVIL_USER=$'ev\nil\e[31m'
EVIL_HOST=$'h\ao\rst\e]0;pwned\a\b'
EVIL_CMD=$'rm\n-rf\e[2J'

# set_meta NAME FIELD VALUE...: writes FIELD=VALUE into the holder's
# record of lock NAME (found by its suffix, whatever the key layout): a
# flag and the fence, then NUL-led fields in the order of FIELDS.
set_meta() {
	local name=$1
	shift
	META_SOCK=$REDIS_SOCK /usr/bin/python3 - "$name" "$@" <<'EOF'
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["META_SOCK"])
name = sys.argv[1].encode()
keys = [k for k in r.scan_iter(count=1000)
        if k.endswith(b"\0holder") and name in k]
if len(keys) != 1:
    sys.exit("set_meta: holder records for %r: %r" % (name, keys))
FIELDS = ["token", "ttl", "host", "pid", "user", "cmd", "start"]
head, *fields = r.get(keys[0]).split(b"\0")
pairs = sys.argv[2:]
for f, v in zip(pairs[0::2], pairs[1::2]):
    fields[FIELDS.index(f)] = os.fsencode(v)
r.set(keys[0], b"\0".join([head] + fields), keepttl=True)
EOF
}

# has_controls TEXT: TEXT holds a control character other than newline.
has_controls() {
	LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$1"
}

# evil_lock NAME: lock NAME held for a minute, its holder record made evil.
evil_lock() {
	run -0 --separate-stderr redlock acquire -t 1m "$1"
	set_meta "$1" user "$EVIL_USER" host "$EVIL_HOST" cmd "$EVIL_CMD"
}

# status_and_list_escaped NAME: status NAME and list print no raw
# control character, and list shows the lock on one line.
status_and_list_escaped() {
	run -0 --separate-stderr redlock status "$1"
	! has_controls "$output" || fail "raw control characters in status: $(printf '%q' "$output")"
	run -0 --separate-stderr redlock list
	! has_controls "$output" || fail "raw control characters in list: $(printf '%q' "$output")"
	assert_equal "${#lines[@]}" 1
}

@test "status prints an evil holder's user, host and command escaped: no control characters, as many lines as for a plain holder" {
	run -0 --separate-stderr redlock acquire -t 1m plain
	run -0 --separate-stderr redlock status plain
	local plain_lines=${#lines[@]}
	evil_lock esc
	run -0 --separate-stderr redlock status esc
	! has_controls "$output" || fail "raw control characters in status: $(printf '%q' "$output")"
	assert_equal "${#lines[@]}" "$plain_lines"
	# The user is still there, on one line.
	assert_line --regexp 'ev.*il'
	assert_line --regexp 'h.*o.*st'
}

@test "list prints one line per lock when a holder's user and host hold newlines and escape sequences" {
	run -0 --separate-stderr redlock acquire -t 1m plain
	evil_lock esc
	run -0 --separate-stderr redlock list
	! has_controls "$output" || fail "raw control characters in list: $(printf '%q' "$output")"
	assert_equal "${#lines[@]}" 2
	assert_line --regexp '^esc .*ev.*il'
	assert_line --regexp '^plain '
}

@test "status --json is valid JSON that gives the holder's user, host and command exactly" {
	evil_lock esc
	run -0 --separate-stderr redlock status --json esc
	assert_equal "${#lines[@]}" 1
	run -0 /usr/bin/python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["user"] == sys.argv[2], o["user"]
assert o["host"] == sys.argv[3], o["host"]
assert o["cmd"] == sys.argv[4], o["cmd"]
' "$output" "$EVIL_USER" "$EVIL_HOST" "$EVIL_CMD"
}

@test "list --json is one valid JSON object a line with the exact holder fields" {
	run -0 --separate-stderr redlock acquire -t 1m plain
	evil_lock esc
	run -0 --separate-stderr redlock list --json
	assert_equal "${#lines[@]}" 2
	local l
	for l in "${lines[@]}"; do
		/usr/bin/python3 -c '
import json, sys
o = json.loads(sys.argv[1])
if o["name"] == "esc":
    assert o["user"] == sys.argv[2], o["user"]
    assert o["host"] == sys.argv[3], o["host"]
' "$l" "$EVIL_USER" "$EVIL_HOST" || fail "not valid JSON or wrong fields: $l"
	done
}

@test "a holder started with USER holding a newline and an escape sequence shows up escaped in status and list" {
	USER=$EVIL_USER LOGNAME=$EVIL_USER run -0 --separate-stderr redlock acquire -t 1m envuser
	status_and_list_escaped envuser
}

@test "a holder whose command holds an escape sequence shows up escaped in status and list" {
	local f=$BATS_TEST_TMPDIR/held
	bg_start h "$RL" evilcmd /bin/sh -c $': >"$1"; exec sleep 30 # \e[31mred\e[0m\n' sh "$f"
	wait_for_file "$f" 20
	status_and_list_escaped evilcmd
}

@test "a lock NAME with a newline and an escape sequence is one escaped line in list" {
	run -0 --separate-stderr redlock acquire -t 1m $'na\nme\e[1m'
	run -0 --separate-stderr redlock list
	! has_controls "$output" || fail "raw control characters in list: $(printf '%q' "$output")"
	assert_equal "${#lines[@]}" 1
}

# has_c1 TEXT: TEXT holds a C1 control, raw (0x80-0x9f) or in UTF-8
# (0xc2 0x80-0x9f).
has_c1() {
	LC_ALL=C grep -q $'[\x80-\x9f]' <<<"$1"
}

@test "C1 controls, raw and in UTF-8, are escaped in status, list and break; other UTF-8 stays as it is" {
	local raw=$'u\x9b31m' utf=$'h\xc2\x9b2J\xc2\x85' cmd=$'c\xc2\x90x\x9d'
	run -0 --separate-stderr redlock acquire -t 1m c1
	set_meta c1 user "$raw" host "$utf" cmd "$cmd"
	run -0 --separate-stderr redlock status c1
	! has_c1 "$output" || fail "raw C1 in status: $(printf '%q' "$output")"
	assert_output --partial 'u\x9b31m'
	assert_output --partial 'h\xc2\x9b2J'
	run -0 --separate-stderr redlock list
	! has_c1 "$output" || fail "raw C1 in list: $(printf '%q' "$output")"
	run -0 --separate-stderr redlock break c1
	! has_c1 "$stderr" || fail "raw C1 in break: $(printf '%q' "$stderr")"
	# Printable UTF-8 is no control: it is shown as it is.
	run -0 --separate-stderr redlock acquire -t 1m café
	set_meta café user 'jürgen'
	run -0 --separate-stderr redlock status café
	assert_output --partial 'jürgen@'
}

@test "a hostile user and host in one holder record: status escapes both on one line, list is one line, list --json parses" {
	local tok
	tok=$(USER=$'ev\nil\e[31m' redlock acquire -t 1m hostile)
	# The holder's record: its third NUL-led field is the host.
	rcli EVAL "local k = KEYS[1] .. string.char(0) .. 'holder'
		local i = 0
		local m = string.gsub(redis.call('GET', k), '%z[^%z]*', function(s)
			i = i + 1
			if i == 3 then return string.char(0) .. ARGV[1] end
		end)
		return redis.call('SET', k, m, 'KEEPTTL')" \
		1 '{redlock:hostile}' $'h\e]0;x\a' >/dev/null
	run -0 redlock status hostile
	[[ $output != *$'\e'* ]] || fail "escape sequence in status: $output"
	assert_output --partial 'ev\x0ail\x1b[31m@h\x1b]0;x\x07'
	run -0 redlock list
	assert_equal "${#lines[@]}" 1
	[[ $output != *$'\e'* ]] || fail "escape sequence in list"
	run -0 redlock list --json
	run -0 python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin]' <<<"$output"
	redlock release hostile "$tok"
}

@test "diagnostics show a NAME's controls, C1 ones raw or in UTF-8, and bytes that are not UTF-8 as '?'; other UTF-8 stays" {
	local name=$'a\x9bb\xc2\x9bc\xff\n\e[2J\xc3\xa9'
	run -1 --separate-stderr redlock release "$name" tok
	assert_equal "$stderr" "redlock: cannot release lock 'a?b??c???[2Jé': it is not held"
	run -1 --separate-stderr redlock break "$name"
	assert_equal "$stderr" "redlock: lock 'a?b??c???[2Jé' was not held"
}
