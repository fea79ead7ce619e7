#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Closed standard descriptors (redlock(1), SYNOPSIS): redlock works
# when started with stdin, stdout or stderr closed, and never writes its
# own output to a descriptor it opened for something else - a diagnostic
# must not become a "signal" read from its self-pipe, nor bytes on a
# Redis connection, nor the command's output.

load helpers

lifecycle main

# closing 0|2|02|1|012 CMD...: runs CMD with those standard descriptors
# closed.  (`run CMD 2>&-` would not do: run sends CMD's stderr to its
# own capture.)
closing() {
	local which=$1
	shift
	case $which in
	0) "$@" <&- ;;
	1) "$@" >&- ;;
	2) "$@" 2>&- ;;
	02) "$@" <&- 2>&- ;;
	012) "$@" <&- >&- 2>&- ;;
	esac
}

# error_replies: how many error replies the server has sent since the
# last CONFIG RESETSTAT (garbage written on a connection earns one).
error_replies() { redis_info_field stats total_error_replies; }

@test "redlock -v NAME sleep 1 with stdin and stderr closed exits 0" {
	run closing 02 "$RL" -v n sleep 1
	assert_equal "$status" 0
	assert_output ''
	assert key_absent redlock:n
}

@test "with stdin and stderr closed the command runs normally and its output is only its own" {
	local f=$BATS_TEST_TMPDIR/ran
	run closing 02 "$RL" -v n sh -c 'sleep 0.3; echo out; echo ran >"$1"' sh "$f"
	assert_equal "$status" 0
	assert_output 'out'
	assert_equal "$(cat "$f")" ran
}

@test "with stderr closed the -v diagnostics go nowhere: not to the command's stdout, not to Redis" {
	assert_equal "$(rcli CONFIG RESETSTAT)" OK
	run closing 2 "$RL" -v n sh -c 'echo out'
	assert_equal "$status" 0
	assert_output 'out'
	assert_equal "$(error_replies)" 0
	assert key_absent redlock:n
}

@test "redlock -v with stdout closed exits 0 and runs the command" {
	local f=$BATS_TEST_TMPDIR/ran
	run --separate-stderr closing 1 "$RL" -v n sh -c 'echo ran >"$1"' sh "$f"
	assert_equal "$status" 0
	assert_equal "$(cat "$f")" ran
	assert_diagnostics
}

@test "--help and --version with stdout closed say so and exit 74; a full stdout too" {
	run --separate-stderr closing 1 "$RL" --help
	assert_equal "$status" 74
	assert_equal "$stderr" 'redlock: cannot write to stdout: Bad file descriptor'
	run --separate-stderr closing 1 "$RL" --version
	assert_equal "$status" 74
	run -74 --separate-stderr bash -c '"$RL" --help >/dev/full'
	run -0 "$RL" --version
}

@test "redlock -v with stdin, stdout and stderr all closed exits 0 and runs the command" {
	local f=$BATS_TEST_TMPDIR/ran
	assert_equal "$(rcli CONFIG RESETSTAT)" OK
	"$RL" -v n sh -c 'echo ran >"$1"' sh "$f" <&- >&- 2>&-
	assert_equal "$?" 0
	assert_equal "$(cat "$f")" ran
	assert_equal "$(error_replies)" 0
	assert key_absent redlock:n
}

@test "with stdin closed a command that reads stdin sees end of input or an error, never redlock's own data, and does not hang" {
	local f=$BATS_TEST_TMPDIR/read
	run closing 0 timeout 10 "$RL" n sh -c 'cat >"$1" 2>/dev/null; echo "done"' sh "$f"
	assert_equal "$status" 0
	assert_output 'done'
	assert_equal "$(wc -c <"$f")" 0
}

@test "without -v and stderr closed, exit statuses are still the command's: 3 is 3" {
	run closing 02 "$RL" n sh -c 'exit 3'
	assert_equal "$status" 3
}

@test "redlock acquire with stdin and stderr closed prints the token and exits 0" {
	run closing 02 "$RL" acquire -t 1m a
	assert_equal "$status" 0
	assert_regex "$output" "$UUID_RE"
	assert_equal "$(rcli GET redlock:a)" "$output"
	run closing 02 "$RL" release a "$output"
	assert_equal "$status" 0
	assert key_absent redlock:a
}

@test "redlock -v acquire with stdin and stderr closed prints only the token" {
	run closing 02 "$RL" -v acquire -t 1m a
	assert_equal "$status" 0
	assert_regex "$output" "$UUID_RE"
	assert_equal "${#lines[@]}" 1
}

# The renewal warning.  A holder with a 6 s TTL renews every 2 s and
# gives each try the time its lease affords (about 1.3 s, src/lease.c);
# the second failed try in a row is reported: "cannot renew the lock
# (retrying)".  hiccup_renewals pauses the server's writes (CLIENT PAUSE
# WRITE: the renewal script waits, the test's own reads do not) from
# within 300 ms of a grant until two renewal tries have given up on it,
# then lets the third through, before the command must be stopped.  The command traps
# every signal redlock forwards and records any it gets.
TRAPPING='p=$1
	for s in HUP INT QUIT TERM USR1 USR2 ALRM PIPE; do trap "echo $s >>\"$p.sigs\"" $s; done
	: >"$p.held"
	. "$TESTS_DIR/lib/await.sh"
	await_file "$p.release" 30
	exit 0'

# hiccup_renewals KEY TTL_MS: the pause above, on one connection that watches
# the clients blocked in a script (CLIENT LIST, flag b): the second of
# them gone is the second try given up.  Fails after 10 s without.
hiccup_renewals() {
	/usr/bin/python3 - "$REDIS_SOCK" "$1" "$2" <<'EOF'
import redis, sys, time
r = redis.Redis(unix_socket_path=sys.argv[1])
end = time.time() + 10
while r.pttl(sys.argv[2]) <= int(sys.argv[3]) - 300:
    if time.time() > end:
        sys.exit("the lock was never just granted")
    time.sleep(0.005)
r.execute_command("CLIENT", "PAUSE", 10000, "WRITE")
seen = []
try:
    while time.time() < end:
        now = [c["id"] for c in r.client_list()
               if "b" in c["flags"] and c["cmd"].startswith("eval")]
        seen += [i for i in now if i not in seen]
        if len(seen) >= 2 and seen[1] not in now:
            sys.exit(0)
        time.sleep(0.01)
    sys.exit("renewal tries blocked: %s" % seen)
finally:
    r.execute_command("CLIENT", "UNPAUSE")
EOF
}

# renewal_hiccup TAG REDIRECTION: runs the scenario with the holder's
# stdin and stderr closed ("closed") or stdin /dev/null and stderr to
# TAG.err ("file"); leaves BG_STATUS.
renewal_hiccup() {
	local tag=$1 p=$BATS_TEST_TMPDIR/$1
	if [[ $2 == closed ]]; then
		"$SPAWN" "$RL" -t 6s hic /bin/sh -c "$TRAPPING" trapping "$p" \
			<&- >"$p.out" 2>&- 3>&- &
	else
		"$SPAWN" "$RL" -t 6s hic /bin/sh -c "$TRAPPING" trapping "$p" \
			</dev/null >"$p.out" 2>"$p.err" 3>&- &
	fi
	echo $! >"$p.pid"
	echo $! >>"$BATS_TEST_TMPDIR/bg.pids"
	wait_for_file "$p.held" 20
	hiccup_renewals redlock:hic 6000 || fail "no renewal hiccup"
	# Once the pause is over, a renewal gets through: the TTL is back
	# above what is left of the first lease.
	wait_until -t 10 eval '(($(rcli PTTL redlock:hic) > 3000)) || pid_dead "$(cat "$p.pid")"' ||
		fail "no renewal got through after the pause"
	if pid_dead "$(cat "$p.pid")"; then
		bg_wait "$tag" 1
		fail "the holder ended with status $BG_STATUS during the hiccup; the command trapped: $(tr '\n' ' ' 2>/dev/null <"$p.sigs")"
	fi
	: >"$p.release"
	bg_wait "$tag" 15
}

@test "harness: a renewal hiccup makes redlock print a renewal warning on stderr, and the holder goes on to exit 0" {
	renewal_hiccup open file
	assert_equal "$BG_STATUS" 0
	grep -q 'cannot renew' "$BATS_TEST_TMPDIR/open.err" ||
		fail "no renewal warning; stderr: $(cat "$BATS_TEST_TMPDIR/open.err")"
	assert [ ! -e "$BATS_TEST_TMPDIR/open.sigs" ]
}

@test "with stdin and stderr closed a renewal warning does not turn into a signal to the command" {
	renewal_hiccup closed closed
	[[ ! -e $BATS_TEST_TMPDIR/closed.sigs ]] ||
		fail "the command got signals: $(tr '\n' ' ' <"$BATS_TEST_TMPDIR/closed.sigs")"
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:hic
}

@test "closed standard descriptors: with -v and a renewal, with output, and for acquire and release, the command runs and the verbs work" {
	run -0 bash -c '"$RL" -v -t 300ms fds sleep 0.5 <&- 2>&-; echo "status=$?"'
	assert_output --partial 'status=0'
	run -0 bash -c '"$RL" -v fds2 sh -c "echo out" <&- 2>&-'
	assert_output out
	run -0 bash -c 'tok=$("$RL" acquire fds3 <&- 2>&-) && "$RL" release fds3 "$tok" <&- 2>&-'
}

@test "the command finds closed descriptors closed" {
	run -0 bash -c '"$RL" fds4 sh -c "test -e /proc/self/fd/0 && echo open || echo closed" <&-'
	assert_output closed
}
