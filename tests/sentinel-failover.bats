#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Sentinel failovers (HIGH AVAILABILITY in redlock-protocol(7)): a
# holder follows a failover, and a waiter rides one out and then waits
# for the failover guard's hold.  Each test builds and stops a setup of
# its own (master, replica, three sentinels); sentinel.bats holds the
# tests that fail nothing over, so that the files run side by side.
#
# The failover files (sentinel-failover, sentinel-staged-loss,
# sentinel-staged-waiters, sentinel-unsynced) are one file cut in four
# so that tests/run.sh runs them side by side: each test waits for a
# failover and a 12 s lease, and one after another they were the
# suite's longest file.

load helpers
load fault_helpers
load sentinel_helpers

lifecycle

@test "a failover while a command holds a replicated lock: the command goes on on the new master and exits 0" {
	sentinel_setup b svc-b
	local url=$SENTINEL_URL p0 tok
	start_guarded h -v -u "$url" -t 12s job
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	wait_until caught_up b
	fail_over b svc-b
	assert_equal "$(rcli_at b-r GET redlock:job)" "$tok"
	# The next renewal reaches the new master: the key's TTL goes up.
	p0=$(pttl_on b-r redlock:job)
	wait_until -t 15 pttl_above b-r redlock:job $((p0 + 500))
	assert pid_alive "$(bg_pid h)"
	release_guarded h
	sentinel_teardown b
	assert_equal "$BG_STATUS" 0
	refute_regex "$(bg_err h)" 'lost'
	assert_regex "$(bg_err h)" "master svc-b at 127\.0\.0\.1:$(redis_port b-r)"
}

@test "a waiter rides out a failover and then waits for the guard's hold" {
	sentinel_setup c svc-c
	local url=$SENTINEL_URL
	start_guarded h -u "$url" -t 8s job
	guarded_bg w -v -u "$url" -t 4s job
	wait_until -t 10 _blocked_on c-m
	wait_until caught_up c
	fail_over c svc-c
	release_guarded h
	assert_equal "$BG_STATUS" 0
	# While the guard holds grants back (the prefix's, every NAME), -n
	# says so, as status would, not "held by someone else".
	run --separate-stderr redlock -n -u "$url" -t 4s probe true
	assert_equal "$status" 1
	assert_regex "$stderr" "lock 'probe' is free, held back after a failover \\([0-9.]+ s left\\)"
	assert_gets_lock w 30
	release_guarded w
	sentinel_teardown c
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	assert_no_overlap "$BATS_TEST_TMPDIR/intervals"
}
_blocked_on() { rcli_at "$1" CLIENT LIST | grep -q 'cmd=blpop'; }
