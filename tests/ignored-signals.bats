#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Signals as the caller left them (redlock(1), "Running a command under the lock"): a signal that
# redlock starts with ignored (nohup, trap '' HUP, SIGINT and SIGQUIT in
# a background job of a non-interactive shell) stays ignored, in redlock
# and in the command, exactly as without redlock.  flock(1) in the same
# place is the reference: each scenario runs under flock first and
# redlock must do what flock did.

load helpers

lifecycle main

# The command of every scenario ($1: a path prefix P).  It records its pid
# (P.child) and the SigIgn mask it started with (P.sigign), traps SIGTERM
# (records it in P.got, exits 7), says P.held, and runs until P.release
# (at most 60 s), then exits 3.  An ignored signal cannot be trapped by a
# non-interactive sh, so only the signals it did not inherit ignored can
# reach it.
BODY='p=$1
	echo $$ >"$p.child"
	grep "^SigIgn:" /proc/$$/status | cut -f2 >"$p.sigign"
	trap "echo TERM >>\"$p.got\"; exit 7" TERM
	: >"$p.held"
	. "$TESTS_DIR/lib/await.sh"
	await_file "$p.release"
	exit 3'

# ignored MASK SIGNUM: bit SIGNUM-1 of the hex SigIgn MASK is set.
ignored() {
	(((0x$1 >> ($2 - 1)) & 1))
}

# sig_mask P: the SigIgn mask the command of scenario P started with.
sig_mask() { cat "$1.sigign"; }

# parent_of PID
parent_of() {
	local stat rest
	stat=$(<"/proc/$1/stat")
	rest=${stat##*) }
	read -r _ rest _ <<<"$rest"
	echo "$rest"
}

# launch TAG TOOL LOCK WRAPPER...: starts WRAPPER... TOOL LOCK sh -c BODY
# in the background (TOOL is "$RL" or flock, LOCK a lock name or a file),
# waits until the command runs and sets TOOL_PID (the process of TOOL, the
# parent of the command) and CHILD.
launch() {
	local tag=$1 tool=$2 lock=$3 p=$BATS_TEST_TMPDIR/$1
	shift 3
	rm -f "$p".{child,sigign,got,held,release}
	bg_start "$tag" "$@" "$tool" "$lock" /bin/sh -c "$BODY" body "$p"
	wait_for_file "$p.held" 20 || {
		echo "launch $tag: the command never ran; $(bg_err "$tag")" >&2
		return 1
	}
	CHILD=$(cat "$p.child")
	TOOL_PID=$(parent_of "$CHILD")
}

# let_end TAG: lets the command of TAG exit 3 and waits for the job.
let_end() {
	: >"$BATS_TEST_TMPDIR/$1.release"
	bg_wait "$1" 20
}

# survives_signal TAG SIG: sends SIG to the tool of the running scenario
# TAG; succeeds if the command is still running half a second later.
survives_signal() {
	kill "-$2" "$TOOL_PID"
	stays_false -t 0.5 pid_dead "$CHILD"
}

# The shell wrappers: nohup; a shell that ignores SIGHUP and runs the tool
# (not exec'd); a background job of a non-interactive shell.
TRAP_HUP=(/bin/sh -c 'trap "" HUP; "$@"; exit $?' trapper)
BG_JOB=(/bin/sh -c '"$@" & wait $!' bgjob)

@test "nohup redlock NAME cmd: a SIGHUP to redlock leaves the command running and redlock exits with its status, as nohup flock does" {
	local f=$BATS_TEST_TMPDIR/lockfile
	# The reference.
	launch ref flock "$f" nohup
	assert survives_signal ref HUP
	let_end ref
	assert_equal "$BG_STATUS" 3
	# redlock in the same place.
	launch h "$RL" nohupped nohup
	assert_equal "$TOOL_PID" "$(bg_pid h)"
	survives_signal h HUP || fail "the command died of the SIGHUP sent to redlock (it was started under nohup)"
	assert pid_alive "$TOOL_PID"
	assert key_exists redlock:nohupped
	let_end h
	assert_equal "$BG_STATUS" 3
	assert key_absent redlock:nohupped
}

@test "under nohup the command starts with SIGHUP ignored, as under nohup flock" {
	launch ref flock "$BATS_TEST_TMPDIR/lockfile" nohup
	ignored "$(sig_mask "$BATS_TEST_TMPDIR/ref")" 1 || fail "harness: flock's command does not ignore SIGHUP"
	let_end ref
	launch h "$RL" nohupped nohup
	local m
	m=$(sig_mask "$BATS_TEST_TMPDIR/h")
	ignored "$m" 1 || fail "the command does not inherit SIGHUP ignored (SigIgn $m)"
	let_end h
	assert_equal "$BG_STATUS" 3
}

@test "after trap '' HUP in a shell that then runs redlock, a SIGHUP to redlock leaves the command running" {
	launch ref flock "$BATS_TEST_TMPDIR/lockfile" "${TRAP_HUP[@]}"
	assert survives_signal ref HUP
	let_end ref
	assert_equal "$BG_STATUS" 3
	launch h "$RL" trapped "${TRAP_HUP[@]}"
	survives_signal h HUP || fail "the command died of a SIGHUP its caller ignored"
	ignored "$(sig_mask "$BATS_TEST_TMPDIR/h")" 1 || fail "the command does not start with SIGHUP ignored"
	let_end h
	assert_equal "$BG_STATUS" 3
	assert key_absent redlock:trapped
}

@test "in a background job of a non-interactive shell a SIGINT to redlock does not stop the command, as with flock" {
	launch ref flock "$BATS_TEST_TMPDIR/lockfile" "${BG_JOB[@]}"
	assert survives_signal ref INT
	let_end ref
	assert_equal "$BG_STATUS" 3
	launch h "$RL" bgjob "${BG_JOB[@]}"
	survives_signal h INT || fail "the command died of a SIGINT its caller ignored"
	assert pid_alive "$TOOL_PID"
	let_end h
	assert_equal "$BG_STATUS" 3
	assert key_absent redlock:bgjob
}

@test "in a background job of a non-interactive shell a SIGQUIT to redlock does not stop the command, as with flock" {
	launch ref flock "$BATS_TEST_TMPDIR/lockfile" "${BG_JOB[@]}"
	assert survives_signal ref QUIT
	let_end ref
	assert_equal "$BG_STATUS" 3
	launch h "$RL" bgjob "${BG_JOB[@]}"
	survives_signal h QUIT || fail "the command died of a SIGQUIT its caller ignored"
	let_end h
	assert_equal "$BG_STATUS" 3
}

@test "the command of a background job starts with SIGINT and SIGQUIT ignored, as flock's does" {
	launch ref flock "$BATS_TEST_TMPDIR/lockfile" "${BG_JOB[@]}"
	local m
	m=$(sig_mask "$BATS_TEST_TMPDIR/ref")
	{ ignored "$m" 2 && ignored "$m" 3; } || fail "harness: flock's command has SigIgn $m"
	let_end ref
	launch h "$RL" bgjob "${BG_JOB[@]}"
	m=$(sig_mask "$BATS_TEST_TMPDIR/h")
	ignored "$m" 2 || fail "SIGINT is not ignored in the command (SigIgn $m)"
	ignored "$m" 3 || fail "SIGQUIT is not ignored in the command (SigIgn $m)"
	let_end h
	assert_equal "$BG_STATUS" 3
}

@test "a command started with nothing ignored does not see SIGHUP, SIGINT or SIGQUIT ignored" {
	launch h "$RL" plain
	local m
	m=$(sig_mask "$BATS_TEST_TMPDIR/h")
	! ignored "$m" 1 || fail "SIGHUP ignored in the command (SigIgn $m)"
	! ignored "$m" 2 || fail "SIGINT ignored in the command (SigIgn $m)"
	! ignored "$m" 3 || fail "SIGQUIT ignored in the command (SigIgn $m)"
	let_end h
	assert_equal "$BG_STATUS" 3
}

@test "under nohup a SIGTERM, which is not ignored, is still forwarded to the command" {
	launch h "$RL" nohupped nohup
	kill -TERM "$TOOL_PID"
	bg_wait h 15
	assert_equal "$BG_STATUS" 7
	assert_equal "$(cat "$BATS_TEST_TMPDIR/h.got")" TERM
	assert key_absent redlock:nohupped
}

@test "in a background job a SIGTERM, which is not ignored, is still forwarded to the command" {
	launch h "$RL" bgjob "${BG_JOB[@]}"
	kill -TERM "$TOOL_PID"
	bg_wait h 15
	assert_equal "$BG_STATUS" 7
	assert_equal "$(cat "$BATS_TEST_TMPDIR/h.got")" TERM
	assert key_absent redlock:bgjob
}

# sig_ignored PID SIG: the running process has SIG (a number) ignored now.
sig_ignored() {
	ignored "$(awk '/^SigIgn:/ { print $2 }' "/proc/$1/status")" "$2"
}

@test "nohup redlock NAME cmd: redlock itself outlives a SIGHUP while its command runs, then exits with the command's status and releases" {
	launch h "$RL" hup nohup
	kill -HUP "$TOOL_PID"
	assert sig_ignored "$CHILD" 1
	assert stays_false -t 0.5 pid_dead "$TOOL_PID"
	let_end h
	assert_equal "$BG_STATUS" 3
	assert key_absent redlock:hup
}

@test "SIGINT ignored by the shell that execs redlock (trap '' INT) stays ignored in redlock and in the command" {
	launch h "$RL" ign /bin/sh -c 'trap "" INT; exec "$@"' execer
	assert_equal "$TOOL_PID" "$(bg_pid h)"
	assert sig_ignored "$CHILD" 2
	kill -INT "$TOOL_PID"
	assert stays_false -t 0.5 pid_dead "$CHILD"
	let_end h
	assert_equal "$BG_STATUS" 3
}

@test "after trap '' HUP in a shell that execs redlock, a SIGTERM, which is not ignored, is still forwarded to the command" {
	launch h "$RL" fwd /bin/sh -c 'trap "" HUP; exec "$@"' execer
	kill -TERM "$TOOL_PID"
	bg_wait h
	assert_equal "$BG_STATUS" 7
	assert_equal "$(cat "$BATS_TEST_TMPDIR/h.got")" TERM
}
