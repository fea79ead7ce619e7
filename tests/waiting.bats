#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Waiting for a held lock: -n, -w, -E, blocking waits and wake-ups
# (redlock(1), OPTIONS, the conflict status of EXIT STATUS; waiting never spins).

load helpers

lifecycle main

got() { test -e "$BATS_TEST_TMPDIR/${1:-got}"; }

# start_waiter TAG [REDLOCK-OPTION...] NAME: background redlock whose
# command creates TAG.got; returns once it has connected to Redis.
start_waiter() {
	local tag=$1 before
	shift
	before=$(clients_count)
	bg_start "$tag" "$RL" "$@" touch "$BATS_TEST_TMPDIR/$tag.got"
	# `before` counted its own query's connection, which is gone now.
	wait_until -t 10 clients_at_least "$before"
}
clients_at_least() { (($(clients_count) >= $1 + 1)); }

@test "-n exits 1 at once when the lock is held, without running the command" {
	hold_lock h name
	local t0 t1
	t0=$(now_ms)
	run -1 --separate-stderr redlock -n name touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 3000)" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$output" ''
	assert [ "${#stderr_lines[@]}" -ge 1 ]
	assert_diagnostics
	release_lock h
	assert_equal "$BG_STATUS" 0
}

@test "--nonblock is -n" {
	hold_lock h name
	run -1 redlock --nonblock name true
	release_lock h
}

@test "-n takes a free lock" {
	run -0 redlock -n name sh -c 'redis-cli -s "$REDIS_SOCK" EXISTS "$REDLOCK_KEY"'
	assert_output 1
}

@test "-q silences the lock-is-busy message" {
	hold_lock h name
	run -1 --separate-stderr redlock -q -n name true
	assert_equal "$stderr" ''
	release_lock h
}

@test "-E 0 makes a busy lock exit 0 without running the command" {
	hold_lock h name
	run -0 redlock -n -E 0 name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	release_lock h
}

@test "-E 42 with -n exits 42 when the lock is held" {
	hold_lock h name
	run -42 redlock -n -E 42 name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -42 redlock --conflict-exit-code 42 -n name true
	release_lock h
}

@test "-E does not change the command's own status" {
	run -3 redlock -n -E 42 name sh -c 'exit 3'
	run -0 redlock -n -E 42 name true
}

@test "-w 1s gives up after about one second" {
	hold_lock h name
	local t0 t1
	t0=$(now_ms)
	run -1 --separate-stderr redlock -w 1s name touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 900 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 6000)" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_diagnostics
	release_lock h
}

@test "--timeout 250ms gives up after about a quarter second" {
	hold_lock h name
	local t0 t1
	t0=$(now_ms)
	run -1 redlock --timeout 250ms name true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 200 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 5000)" ]
	release_lock h
}

@test "-w that runs out exits with the -E value" {
	hold_lock h name
	run -42 redlock --wait 0.5 -E 42 name true
	release_lock h
}

@test "-w 0 is the same as -n" {
	hold_lock h name
	local t0 t1
	t0=$(now_ms)
	run -1 redlock -w 0 name touch "$BATS_TEST_TMPDIR/ran"
	run -1 redlock --wait 0 name true
	run -7 redlock --timeout 0 -E 7 name true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 6000)" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	release_lock h
	run -0 redlock -w 0 name true
}

@test "-w gets the lock when the holder releases in time" {
	hold_lock h name
	start_waiter w -w 30s name
	assert stays_false -t 0.5 got w.got
	release_lock h
	assert_equal "$BG_STATUS" 0
	bg_wait w 20
	assert_equal "$BG_STATUS" 0
	assert got w.got
}

@test "a blocking waiter gets the lock within moments of the holder finishing" {
	hold_lock h name
	start_waiter w name
	assert stays_false -t 1 got w.got
	release_lock h
	assert_equal "$BG_STATUS" 0
	# The holder's key would expire only after 30 s: a waiter woken by the
	# release is far quicker than that.
	local t0 t1
	t0=$(now_ms)
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 10
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 3000)" ]
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "several waiters each get the lock in turn" {
	hold_lock h name
	local i log=$BATS_TEST_TMPDIR/log
	for i in 1 2 3; do
		bg_start "w$i" "$RL" name sh -c 'echo "$1" >>"$2"' sh "$i" "$log"
	done
	release_lock h
	for i in 1 2 3; do
		bg_wait "w$i" 20
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(sort "$log" | tr '\n' ' ')" '1 2 3 '
	assert key_absent redlock:name
}

@test "a waiter gets the lock once a killed holder's key expires" {
	hold_lock h -t 2s name
	start_waiter w name
	local t0 t1
	t0=$(now_ms)
	kill -KILL "$(bg_pid h)"
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 15
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 8000)" ]
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "a lock released by a foreign client is noticed" {
	assert_equal "$(rcli SET redlock:name foreign-token PX 60000)" OK
	start_waiter w name
	assert stays_false -t 0.5 got w.got
	assert_equal "$(rcli DEL redlock:name)" 1
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 15
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "a foreign lock is taken when its key expires, not before" {
	local t0 t1
	t0=$(now_ms)
	assert_equal "$(rcli SET redlock:name foreign-token PX 1500)" OK
	bg_start w "$RL" name touch "$BATS_TEST_TMPDIR/w.got"
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 15
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 1400 ]
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "waiting does not spin on Redis" {
	hold_lock h name
	start_waiter w name
	local c0 c1
	c0=$(redis_info_field stats total_commands_processed)
	assert stays_false -t 2 got w.got
	c1=$(redis_info_field stats total_commands_processed)
	# A spinning waiter sends thousands of commands in 2 s; a waiter that
	# blocks or polls sensibly sends a handful.
	assert [ $((c1 - c0)) -lt 200 ]
	release_lock h
	bg_wait w 20
	assert_equal "$BG_STATUS" 0
}

@test "a waiter stopped past its -w deadline and then continued gives up, with --fair, -s or neither" {
	local mode t0 d=$BATS_TEST_TMPDIR
	for mode in --fair -s -x; do
		hold_lock h name
		bg_start w "$RL" "$mode" -w 1s name touch "$d/ran"
		wait_until -t 10 _waiters_now name
		t0=$(now_ms)
		kill -STOP "$(bg_pid w)"
		release_lock h
		# Its deadline passes while it is stopped; the lock is free.
		wait_until -t 10 _later_than $((t0 + 1200))
		kill -CONT "$(bg_pid w)"
		bg_wait w 10
		assert_equal "$BG_STATUS" 1
		assert [ ! -e "$d/ran" ]
		assert_regex "$(bg_err w)" "timed out waiting for lock 'name'"
	done
}
_waiters_now() { [[ $(redlock status "$1") == *'waiters: 1'* ]]; }
_later_than() { (($(now_ms) >= $1)); }

@test "the holder record of a run that waited says since when it holds the lock, not since when it waited" {
	local t0 tr start d=$BATS_TEST_TMPDIR
	hold_lock h name
	t0=$(now_ms)
	bg_start w "$RL" -w 20s name sh -c ': >"$1"; exec sleep 30' sh "$d/got"
	wait_until -t 10 _waiters_now name
	wait_until -t 10 _later_than $((t0 + 1500))
	tr=$(now_ms)
	release_lock h
	wait_for_file "$d/got" 10
	run -0 redlock status --json name
	start=$(grep -o '"start_ms":[0-9]*' <<<"$output" | cut -d: -f2)
	# Within a wait round (250 to 300 ms) of the release, a margin for
	# a loaded machine; the wait itself began 1.5 s before it.
	(( start >= tr - 600 )) || fail "start_ms $start is $((tr - start)) ms before the release"
	kill -TERM "$(bg_pid w)"
	bg_wait w 10
}
