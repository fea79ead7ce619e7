#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Terminal use (redlock(1), "Running a command under the lock"): in the foreground of a terminal the command gets
# the terminal, so it can read it and Ctrl-C reaches it.  script(1) gives
# redlock a pseudo-terminal.

load helpers

lifecycle main
test_setup() {
	command -v script >/dev/null || skip "script(1) is not installed"
}

@test "an interactive command reads the terminal under redlock" {
	run -0 timeout 20 script -qec \
	    "$RL ttyread sh -c 'read a; echo got \$a'; echo rc=\$?" /dev/null \
	    < <(printf 'hello\n')
	assert_output --partial 'got hello'
	assert_output --partial 'rc=0'
	assert key_absent redlock:ttyread
}

# type_when_started FILE [KEY]: once FILE exists (bounded wait), type
# Ctrl-C, then keep the terminal open until the shell inside has answered
# (FILE.done) or, with KEY, until KEY is gone.
type_when_started() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ -e $1 ]] && break
		sleep 0.05
	done
	printf '\003'
	for ((i = 0; i < 200; i++)); do
		[[ -e $1.done ]] && break
		[[ -n ${2:-} ]] && key_absent "$2" && break
		sleep 0.05
	done
}

@test "Ctrl-C on the terminal stops the command and the calling shell, as with flock, and releases" {
	local m=$BATS_TEST_TMPDIR/started
	run timeout 20 script -qec \
	    "$RL ttyint sh -c 'echo started; : >$m; sleep 10; echo not reached'; echo rc=\$?; : >$m.done" \
	    /dev/null < <(type_when_started "$m" redlock:ttyint)
	assert_output --partial started
	refute_output --partial 'not reached'
	# The shell that ran redlock got the SIGINT too and did not go on.
	refute_output --partial 'rc='
	assert key_absent redlock:ttyint
}

@test "Ctrl-C in a script's loop stops the script, as with flock" {
	local m=$BATS_TEST_TMPDIR/started
	printf '%s\n' "for f in a b c; do $RL \"loop\$f\" sh -c ': >$m; sleep 10'; echo \"next \$f\"; done; echo loopdone" \
	    >"$BATS_TEST_TMPDIR/loop.sh"
	run timeout 20 script -qec "bash $BATS_TEST_TMPDIR/loop.sh" /dev/null \
	    < <(type_when_started "$m" redlock:loopa)
	refute_output --partial 'next a'
	refute_output --partial loopdone
	assert key_absent redlock:loopa
}
