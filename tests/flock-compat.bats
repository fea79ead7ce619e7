#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The behaviours of flock(1) that a named lock shares, with redlock in
# flock's place and a lock file's path as NAME: -n with
# --conflict-exit-code, --shared against --exclusive, and --timeout
# within its time.  As with flock, a conflict whose status the caller
# chose (-E) is silent.  (Descriptor mode, --no-fork and --fcntl have
# no meaning for a lock kept in Redis.)

load helpers

lifecycle main

# hold_path TAG OPTION... : a background holder of the lock file's path
# (flock's `flock OPTIONS FILE sleep`), returning once it holds it.
hold_path() {
	local tag=$1
	shift
	hold_lock "$tag" "$@" "$LOCKFILE"
}

test_setup() {
	LOCKFILE=$BATS_TEST_TMPDIR/lockfile
	: >"$LOCKFILE"
}

@test "-n on a held lock fails at once with --conflict-exit-code's status" {
	hold_path h
	local t0 t1
	t0=$(now_ms)
	run -5 --separate-stderr redlock -n --conflict-exit-code 5 "$LOCKFILE" echo never
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 1000)" ]
	assert_equal "$output$stderr" 
	run -5 redlock --nonblock -E 5 "$LOCKFILE" -c true
	run -1 redlock --nb "$LOCKFILE" true
	release_lock h
	assert_equal "$BG_STATUS" 0
	run -0 redlock -n -E 5 "$LOCKFILE" true
}

@test "-n on a free lock runs the command with its own status" {
	run -0 redlock -n -E 5 "$LOCKFILE" -c 'echo locked'
	assert_output locked
	run -3 redlock -n -E 5 "$LOCKFILE" sh -c 'exit 3'
}

@test "--shared holders do not conflict with each other" {
	hold_path a --shared
	hold_path b -s
	run -0 --separate-stderr redlock --shared -n -E 5 "$LOCKFILE" -c 'echo shared'
	assert_output shared
	assert_equal "$stderr" ''
	run -0 --separate-stderr redlock --shared "$LOCKFILE" echo shared
	assert_output shared
	assert_equal "$stderr" 
	release_lock a
	release_lock b
}

@test "--exclusive conflicts with a shared holder" {
	hold_path a --shared
	run -5 --separate-stderr redlock --nonblock --exclusive -E 5 "$LOCKFILE" echo never
	assert_equal "$output$stderr" ''
	run -5 redlock --exclusive -n -E 5 "$LOCKFILE" true
	run -5 redlock -x -n -E 5 "$LOCKFILE" true
	run -5 redlock -e -n -E 5 "$LOCKFILE" true
	release_lock a
	run -0 redlock --exclusive -n -E 5 "$LOCKFILE" true
}

@test "--exclusive on the command line undoes REDLOCK_LIMIT from the environment" {
	hold_path a --shared
	REDLOCK_LIMIT=5 run -5 redlock -x -n -E 5 "$LOCKFILE" true
	REDLOCK_LIMIT=5 run -5 redlock --exclusive -n -E 5 "$LOCKFILE" true
	REDLOCK_LIMIT=5 run -5 redlock -e -n -E 5 "$LOCKFILE" true
	# Without it, the environment's --limit holds.
	REDLOCK_LIMIT=5 run -0 redlock -n "$LOCKFILE" true
	release_lock a
}

@test "--shared conflicts with an exclusive holder" {
	hold_path a --exclusive
	run -5 redlock --shared -n -E 5 "$LOCKFILE" true
	release_lock a
	run -0 redlock --shared -n -E 5 "$LOCKFILE" true
}

@test "--exclusive conflicts with an exclusive holder" {
	hold_path a -x
	run -5 redlock -x -n -E 5 "$LOCKFILE" true
	release_lock a
}

@test "--timeout gives up on a held lock within its time, with the conflict status" {
	hold_path h
	local t0 t1
	t0=$(now_ms)
	run -5 redlock --timeout 4 -E 5 "$LOCKFILE" true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 3900 ]
	assert [ $((t1 - t0)) -le "$(scale_ms 5000)" ]
	release_lock h
}

@test "--timeout waits for a shared holder of 3 s and gets the lock within 3 to 5 s" {
	local t0 t1
	t0=$(now_ms)
	bg_start h "$RL" --shared "$LOCKFILE" sh -c ': >"$1"; sleep 3' sh "$BATS_TEST_TMPDIR/h.held"
	wait_for_file "$BATS_TEST_TMPDIR/h.held" 5
	run -0 --separate-stderr redlock --timeout 5 --conflict-exit-code 5 "$LOCKFILE" echo after
	t1=$(now_ms)
	assert_output after
	assert_equal "$stderr" ''
	assert [ $((t1 - t0)) -ge 3000 ]
	assert [ $((t1 - t0)) -le "$(scale_ms 5000)" ]
	bg_wait h 5
	assert_equal "$BG_STATUS" 0
}

@test "a conflict is reported on standard error without -E, and under -v with it" {
	hold_path h
	run -1 --separate-stderr redlock -n "$LOCKFILE" true
	assert_equal "$stderr" "redlock: lock '$LOCKFILE' is held by someone else"
	run -5 --separate-stderr redlock -v -n -E 5 "$LOCKFILE" true
	assert_equal "$stderr" "redlock: lock '$LOCKFILE' is held by someone else"
	run -5 --separate-stderr redlock -w 0.2 -E 5 "$LOCKFILE" true
	assert_equal "$stderr" ''
	release_lock h
}

@test "-w gets the lock when the holder lets go before the timeout" {
	hold_path h
	bg_start w "$RL" -w 5 -E 5 "$LOCKFILE" -c "touch '$BATS_TEST_TMPDIR/w.got'"
	assert stays_false -t 0.5 test -e "$BATS_TEST_TMPDIR/w.got"
	release_lock h
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
	assert [ -e "$BATS_TEST_TMPDIR/w.got" ]
}

@test "--timeout 0 is -n" {
	hold_path h --shared
	run -5 redlock --timeout 0 -E 5 "$LOCKFILE" true
	run -0 redlock --timeout 0 -s -E 5 "$LOCKFILE" true
	release_lock h
}

@test "the lock file's path is the name, byte for byte" {
	run -0 redlock "$LOCKFILE" sh -c 'printf "%s\n" "$REDLOCK_NAME"'
	assert_output "$LOCKFILE"
	hold_path h
	run -0 redlock status "$LOCKFILE"
	release_lock h
}
