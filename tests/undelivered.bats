#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# An undelivered token (redlock(1), EXIT STATUS, status 74): when
# `acquire` cannot write its token (or its --env assignments) - stdout
# full, closed, or a pipe nobody reads - nobody has the token, so redlock
# releases the lock and exits 74.

load helpers

lifecycle main --tcp
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	# into_closed_pipe default|ignore CMD...: runs CMD with stdout a pipe
	# whose reading end is already closed, SIGPIPE at its default or
	# ignored; prints "exit N" or "signal N"; CMD's stderr is kept.
	export INTO_CLOSED_PIPE=$BATS_FILE_TMPDIR/into_closed_pipe
	cat >"$INTO_CLOSED_PIPE" <<'EOF'
#!/usr/bin/python3
import os, signal, sys
r, w = os.pipe()
os.close(r)
pid = os.fork()
if pid == 0:
    for s in range(1, signal.NSIG):
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    if sys.argv[1] == "ignore":
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.dup2(w, 1)
    os.close(w)
    os.execvp(sys.argv[2], sys.argv[2:])
os.close(w)
_, st = os.waitpid(pid, 0)
if os.WIFSIGNALED(st):
    print("signal %d" % os.WTERMSIG(st))
else:
    print("exit %d" % os.WEXITSTATUS(st))
EOF
	chmod +x "$INTO_CLOSED_PIPE"
}

# stdout_closed CMD... / stdout_full CMD...: CMD with stdout closed, or
# /dev/full.  (`run CMD >&-` would not do: run captures CMD's stdout.)
stdout_closed() { "$@" >&-; }
stdout_full() { "$@" >/dev/full; }

# assert_released NAME: nothing of the lock is left but its fencing
# counter, and another acquire gets it at once.
assert_released() {
	assert key_absent "redlock:$1"
	assert_equal "$(rcli --scan --pattern "*$1}*holder" | wc -l)" 0
	run -0 --separate-stderr redlock acquire -n -t 1m "$1"
	assert_regex "$output" "$UUID_RE"
}

# assert_one_diagnostic: after run --separate-stderr: one `redlock: ` line.
assert_one_diagnostic() {
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" '^redlock: '
}

@test "acquire -t 1h with stdout /dev/full exits 74 and the lock is released" {
	run --separate-stderr stdout_full "$RL" acquire -t 1h x
	assert_equal "$status" 74
	assert_one_diagnostic
	assert_released x
}

@test "acquire -t 1h with stdout closed exits 74 and the lock is released" {
	run --separate-stderr stdout_closed "$RL" acquire -t 1h x
	assert_equal "$status" 74
	assert_one_diagnostic
	assert_released x
}

@test "acquire into a pipe whose reader is gone (SIGPIPE at its default) exits 74 and the lock is released" {
	run --separate-stderr "$INTO_CLOSED_PIPE" default "$RL" acquire -t 1h x
	assert_output 'exit 74'
	assert_one_diagnostic
	assert_released x
}

@test "acquire into a pipe whose reader is gone (SIGPIPE ignored) exits 74 and the lock is released" {
	run --separate-stderr "$INTO_CLOSED_PIPE" ignore "$RL" acquire -t 1h x
	assert_output 'exit 74'
	assert_one_diagnostic
	assert_released x
}

@test "acquire --env with stdout /dev/full exits 74 and the lock is released" {
	run --separate-stderr stdout_full "$RL" acquire --env -t 1h x
	assert_equal "$status" 74
	assert_one_diagnostic
	assert_released x
}

@test "acquire --env with stdout closed exits 74 and the lock is released" {
	run --separate-stderr stdout_closed "$RL" acquire --env -t 1h x
	assert_equal "$status" 74
	assert_released x
}

@test "acquire --env into a pipe whose reader is gone exits 74 and the lock is released" {
	run --separate-stderr "$INTO_CLOSED_PIPE" default "$RL" acquire --env -t 1h x
	assert_output 'exit 74'
	assert_released x
}

@test "an acquire that could not deliver its token leaves the fencing counter going up" {
	run -0 --separate-stderr redlock acquire --env -t 1m x
	local f1
	f1=$(sed -n 's/^REDLOCK_FENCE=//p' <<<"$output" | tr -d "'\"")
	run -0 --separate-stderr redlock release x "$(sed -n 's/^REDLOCK_TOKEN=//p' <<<"$output" | tr -d "'\"")"
	run --separate-stderr stdout_full "$RL" acquire -t 1h x
	assert_equal "$status" 74
	run -0 --separate-stderr redlock acquire --env -t 1m x
	local f3
	f3=$(sed -n 's/^REDLOCK_FENCE=//p' <<<"$output" | tr -d "'\"")
	((f3 > f1)) || fail "fence $f3 after $f1"
}

@test "acquire (and acquire --env) into /dev/full or a closed stdout: 74 each time, and no key is left" {
	run -74 bash -c '"$RL" acquire -t 1h full >/dev/full'
	assert key_absent redlock:full
	run -74 bash -c '"$RL" acquire -t 1h closed >&-'
	assert key_absent redlock:closed
	run -74 bash -c '"$RL" acquire --env -t 1h fullenv >/dev/full'
	assert key_absent redlock:fullenv
}

@test "--help and --version into a pipe whose reader is gone exit 74, as every output does, not by SIGPIPE" {
	run --separate-stderr "$INTO_CLOSED_PIPE" default "$RL" --help
	assert_output 'exit 74'
	assert_one_diagnostic
	run --separate-stderr "$INTO_CLOSED_PIPE" default "$RL" --version
	assert_output 'exit 74'
	assert_one_diagnostic
}

@test "an acquire that can neither deliver its token nor release the lock says it stays held until its TTL" {
	local pttl
	# A user that may take a lock but not delete one.
	rcli ACL SETUSER nodel on nopass '~*' '+@all' '-del' >/dev/null
	run --separate-stderr stdout_full "$RL" -u "redis://nodel@127.0.0.1:$(redis_port main)" \
		acquire -t 1h x
	assert_equal "$status" 74
	assert_one_diagnostic
	assert_regex "$stderr" "cannot write the token of lock 'x' to stdout, nor release it \(.*run this command.*\): it stays held until its TTL runs out"
	pttl=$(rcli PTTL redlock:x)
	assert [ "$pttl" -gt 3000000 ]
	rcli ACL DELUSER nodel >/dev/null
}
