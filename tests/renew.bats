#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Renewal while the command runs, and losing the lock (redlock(1), renew, and EXIT STATUS
# status 75, also when a renewal finds the key gone or held by another
# token; --on-lost, --kill-after).

load helpers

lifecycle main

# start_victim TAG [REDLOCK-OPTION...] NAME: a background holder whose
# command (pid in TAG.child) traps SIGTERM (writes TAG.term, exits 0),
# signals TAG.held and otherwise runs until TAG.release (at most 60 s),
# then writes TAG.finished.
start_victim() {
	local tag=$1
	shift
	local d=$BATS_TEST_TMPDIR
	bg_start "$tag" "$RL" "$@" /bin/sh -c '
		trap ": >\"$4\"; exit 0" TERM
		echo $$ >"$1"; : >"$2"; . "$TESTS_DIR/lib/await.sh"
		await_file "$3"
		: >"$5"' victim "$d/$tag.child" "$d/$tag.held" "$d/$tag.release" \
		"$d/$tag.term" "$d/$tag.finished"
	wait_for_file "$d/$tag.held" 20
}

@test "a command running longer than the TTL keeps the lock with the same token" {
	# shellcheck disable=SC2016
	run -0 redlock -t 1s name sh -c '
		i=0
		while [ $i -lt 12 ]; do
			v=$(redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY")
			[ "$v" = "$REDLOCK_TOKEN" ] || { echo "round $i: key=$v"; exit 9; }
			t=$(redis-cli -s "$REDIS_SOCK" PTTL "$REDLOCK_KEY")
			[ "$t" -gt 0 ] && [ "$t" -le 1000 ] || { echo "round $i: pttl=$t"; exit 8; }
			sleep 0.25; i=$((i + 1))
		done'
	assert key_absent redlock:name
}

@test "another redlock cannot take a lock kept alive past its TTL" {
	hold_lock h -t 1s name
	# Three TTLs later the lock is still held.
	assert stays_false -t 3 key_absent redlock:name
	run -1 redlock -n name true
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:name
}

@test "deleting the key while the command runs stops it and exits 75" {
	start_victim v -t 1s name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/v.child")
	assert_equal "$(rcli DEL redlock:name)" 1
	bg_wait v 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
	assert [ -e "$BATS_TEST_TMPDIR/v.term" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/v.finished" ]
	# redlock does not recreate the key it lost.
	assert key_absent redlock:name
	# A lost lock is reported (the command's own stderr is in there too).
	assert grep -q '^redlock: ' "$BATS_TEST_TMPDIR/v.err"
}

@test "overwriting the key with another token stops the command and exits 75" {
	start_victim v -t 1s name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/v.child")
	assert_equal "$(rcli SET redlock:name intruder-token PX 60000)" OK
	bg_wait v 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
	# The other owner's key is left alone.
	assert_equal "$(rcli GET redlock:name)" intruder-token
}

@test "a lost lock is noticed within a renewal period or so" {
	start_victim v -t 3s name
	local t0 t1
	t0=$(now_ms)
	rcli DEL redlock:name >/dev/null
	wait_for_file "$BATS_TEST_TMPDIR/v.term" 20
	t1=$(now_ms)
	# Renewal runs every ttl/3 = 1 s.
	assert [ $((t1 - t0)) -lt "$(scale_ms 5000)" ]
	bg_wait v 10
	assert_equal "$BG_STATUS" 75
}

@test "--on-lost ignore lets the command finish and still reports the loss" {
	start_victim v -t 1s --on-lost ignore name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/v.child")
	rcli DEL redlock:name >/dev/null
	# Several renewal periods pass; the command is left running.
	assert stays_false -t 2 pid_dead "$child"
	assert [ ! -e "$BATS_TEST_TMPDIR/v.term" ]
	: >"$BATS_TEST_TMPDIR/v.release"
	bg_wait v 15
	assert [ -e "$BATS_TEST_TMPDIR/v.finished" ]
	assert_equal "$BG_STATUS" 75
}

@test "--on-lost kill kills the command without SIGTERM first" {
	start_victim v -t 1s --on-lost kill name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/v.child")
	rcli DEL redlock:name >/dev/null
	bg_wait v 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
	assert [ ! -e "$BATS_TEST_TMPDIR/v.term" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/v.finished" ]
}

@test "a command that ignores SIGTERM is killed after --kill-after" {
	local d=$BATS_TEST_TMPDIR
	bg_start v "$RL" -t 3s --kill-after 500ms name /bin/sh -c '
		trap "" TERM
		echo $$ >"$1"; : >"$2"; i=0
		while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done' \
		victim "$d/v.child" "$d/v.held"
	wait_for_file "$d/v.held" 20
	local child t0 t1
	child=$(cat "$d/v.child")
	t0=$(now_ms)
	rcli DEL redlock:name >/dev/null
	bg_wait v 20
	t1=$(now_ms)
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
	assert [ $((t1 - t0)) -lt "$(scale_ms 10000)" ]
}

@test "losing the lock stops the command's background children too" {
	local d=$BATS_TEST_TMPDIR
	bg_start v "$RL" -t 1s name /bin/sh -c '
		sleep 60 & echo $! >"$1"
		: >"$2"; wait' victim "$d/v.bgchild" "$d/v.held"
	wait_for_file "$d/v.held" 20
	local bgchild
	bgchild=$(cat "$d/v.bgchild")
	assert pid_alive "$bgchild"
	rcli DEL redlock:name >/dev/null
	bg_wait v 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$bgchild" 5
}

@test "a command that ends normally is not reported as lost" {
	start_victim v -t 1s name
	# Renewals happen meanwhile.
	assert stays_false -t 1.5 key_absent redlock:name
	: >"$BATS_TEST_TMPDIR/v.release"
	bg_wait v 15
	assert_equal "$BG_STATUS" 0
	assert [ -e "$BATS_TEST_TMPDIR/v.finished" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/v.term" ]
	assert key_absent redlock:name
}
