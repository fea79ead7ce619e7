#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Cron use (redlock(1), SYNOPSIS --min-hold, --max-time, -q, -E): one run per tick
# across hosts, and the crontab lines the README and redlock-scheduling(7)
# show.

load helpers

lifecycle main

# since T0 MS: at least MS milliseconds have passed since T0 (now_ms).
since() { (($(now_ms) - $1 >= $2)); }

@test "two hosts started apart with -n --min-hold run a one-second job exactly once" {
	local t0
	t0=$(now_ms)
	bg_start a redlock -n --min-hold 10s tick sh -c \
	    'echo a >>"$1"; sleep 1' job "$BATS_TEST_TMPDIR/runs.log"
	wait_until -t 5 [ -s "$BATS_TEST_TMPDIR/runs.log" ]
	bg_wait a 15
	assert_equal "$BG_STATUS" 0
	# The second host's clock is late: it starts after the first is done,
	# between one and three seconds after it.
	wait_until -t 5 since "$t0" 1500
	run -1 redlock -n --min-hold 10s tick sh -c \
	    'echo b >>"$1"' job "$BATS_TEST_TMPDIR/runs.log"
	assert_output --partial "held by someone else"
	run cat "$BATS_TEST_TMPDIR/runs.log"
	assert_output a
	# The lock is still there, left to expire at acquire time + 10 s.
	assert key_exists redlock:tick
	local ttl
	ttl=$(rcli PTTL redlock:tick)
	assert [ "$ttl" -gt 5000 ]
	assert [ "$ttl" -le 10000 ]
}

@test "--min-hold does not extend a command that ran longer than the hold" {
	run -0 redlock --min-hold 200ms long sleep 0.5
	assert key_absent redlock:long
	run -0 redlock -n long true
}

@test "--min-hold leaves the lock to expire, and then it is free" {
	local t0 t1
	t0=$(now_ms)
	run -0 --separate-stderr redlock -v --min-hold 1500ms short true
	assert key_exists redlock:short
	# -v says so, and does not claim a release.
	assert_regex "$stderr" "lock 'short' kept 1[0-9]{3} ms more \(--min-hold\)"
	[[ $stderr != *released* ]] || fail "$stderr"
	wait_until -t 10 key_absent redlock:short
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 1400 ]
	run -0 redlock -n short true
}

@test "--min-hold longer than the TTL keeps the lock for the whole hold" {
	run -0 redlock -t 1s --min-hold 2500ms hold true
	local ttl
	ttl=$(rcli PTTL redlock:hold)
	assert [ "$ttl" -gt 1500 ]
}

@test "--max-time 1s on sleep 5 exits 124 after about a second with the lock released" {
	local t0 t1
	t0=$(now_ms)
	run -124 redlock --max-time 1s mt sleep 5
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 950 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 3500)" ]
	assert key_absent redlock:mt
	assert_output --partial "max-time"
}

@test "--max-time stops a background grandchild too" {
	run -124 redlock --max-time 500ms mt2 sh -c \
	    'sleep 30 & echo $! >"$1"; wait' sh "$BATS_TEST_TMPDIR/gc"
	assert wait_for_exit "$(cat "$BATS_TEST_TMPDIR/gc")" 5
	assert key_absent redlock:mt2
}

@test "--max-time gives a command that ignores SIGTERM SIGKILL after --kill-after" {
	local t0 t1
	t0=$(now_ms)
	run -124 redlock --max-time 300ms --kill-after 300ms mt3 sh -c \
	    'trap "" TERM; sleep 30 & wait; sleep 30'
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 550 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 5000)" ]
	assert key_absent redlock:mt3
}

# The crontab lines of the README and redlock-scheduling(7), run as cron
# would run them (sh -c), against a lock that another host holds.

@test "crontab: -n -q -E 0 skips a busy run silently with status 0" {
	hold_lock holder mirror
	run -0 --separate-stderr sh -c 'redlock -n -q -E 0 mirror echo ran || echo mirror: $?'
	assert_output ''
	assert_equal "$stderr" ''
	release_lock holder
	run -0 sh -c 'redlock -n -q -E 0 mirror echo ran || echo mirror: $?'
	assert_output ran
}

@test "crontab: a failure other than a busy lock still reaches cron's mail" {
	run -0 sh -c 'redlock -u redis://127.0.0.1:1 -n -q -E 0 mirror echo ran || echo mirror: $?'
	assert_output 'mirror: 69'
}

@test "crontab: -w gives up, says so and exits 1" {
	hold_lock holder import
	local t0 t1
	t0=$(now_ms)
	run -1 sh -c 'redlock -w 1s import echo ran'
	t1=$(now_ms)
	assert_output --partial "timed out waiting for lock 'import'"
	refute_output --partial ran
	assert [ $((t1 - t0)) -ge 950 ]
	release_lock holder
}

@test "crontab: --min-hold makes a late host skip the same tick quietly" {
	run -0 sh -c 'redlock -n -q -E 0 --min-hold 5s nightly echo first'
	assert_output first
	run -0 --separate-stderr sh -c 'redlock -n -q -E 0 --min-hold 5s nightly echo second'
	assert_output ''
	assert_equal "$stderr" ''
}
