#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Terminal use (SPEC §4): in the foreground of a terminal the command gets
# the terminal, so it can read it and Ctrl-C reaches it.  script(1) gives
# redlock a pseudo-terminal.

load helpers

setup_file() {
	common_setup_file
	start_redis main
	use_redis main
}
teardown_file() { common_teardown_file; }
setup() {
	common_setup
	command -v script >/dev/null || skip "script(1) is not installed"
}
teardown() { common_teardown; }

@test "an interactive command reads the terminal under redlock" {
	run -0 timeout 20 script -qec \
	    "$RL ttyread sh -c 'read a; echo got \$a'; echo rc=\$?" /dev/null \
	    < <(printf 'hello\n')
	assert_output --partial 'got hello'
	assert_output --partial 'rc=0'
	assert key_absent redlock:ttyread
}

# type_when_started FILE: once FILE exists (bounded wait), type Ctrl-C,
# then keep the terminal open until the shell inside has answered.
type_when_started() {
	local i
	for ((i = 0; i < 200; i++)); do
		[[ -e $1 ]] && break
		sleep 0.05
	done
	printf '\003'
	for ((i = 0; i < 200; i++)); do
		[[ -e $1.done ]] && break
		sleep 0.05
	done
}

@test "Ctrl-C on the terminal stops the command, redlock exits 130 and releases" {
	local m=$BATS_TEST_TMPDIR/started
	run -0 timeout 20 script -qec \
	    "$RL ttyint sh -c 'echo started; : >$m; sleep 10; echo not reached'; echo rc=\$?; : >$m.done" \
	    /dev/null < <(type_when_started "$m")
	assert_output --partial started
	refute_output --partial 'not reached'
	assert_output --partial 'rc=130'
	assert key_absent redlock:ttyint
}
