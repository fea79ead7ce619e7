#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The failover guard (HIGH AVAILABILITY in redlock-protocol(7)) when the
# promoted replica never finished its first sync: it holds neither the
# lock nor the guard's record, and still grants nothing before the old
# holder's lease could have ended.  Each test builds and stops a setup
# of its own (master, replica, three sentinels).
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

# unsynced_loss G VARIANT: the replica never had its first sync (the
# master delays it: sentinel_setup_unsynced), so it has neither the
# holder's lock nor the guard's record when Sentinel promotes it; with
# VARIANT "rejoin" the old master comes back as its replica, which makes
# Redis start the new master's replication history afresh (its
# master_replid2 all zeros, as on a server that never was a replica).
# Either way the failover must hold grants back: a waiter that asks the
# new master once it is found must get the lock only after the holder's
# lease (12 s from its start) could have ended, and after its command is
# gone.
unsynced_loss() {
	local g=$1 variant=$2 url kill_ms d=$BATS_TEST_TMPDIR
	sentinel_setup_unsynced "$g" "svc-$g" || return 1
	url=$SENTINEL_URL
	start_guarded h -u "$url" -t 12s job
	[[ -n $(record "$g-m" replid) ]] || fail "no record on the master"
	assert no_record "$g-r"
	kill_ms=$(now_ms)
	kill_redis "$g-m"
	promoted "$g" "svc-$g"
	if [[ $variant == rejoin ]]; then
		rejoin_unsynced "$g"
		refute_regex "$(redis_info_field replication master_replid2 "$g-r")" '[1-9a-f]'
	fi
	guarded_bg w -v -u "$url" -t 12s -w 40 job
	assert_failed_over_handover "$kill_ms"
	(($(start_ms w) >= $(start_ms h) + 12000)) ||
		fail "the waiter started at $(start_ms w), before the holder's lease (from $(start_ms h), 12 s) could have ended"
	release_guarded w
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	# The record now holds the sentinels' epoch of the promotion.
	local epoch
	epoch=$(scli "$(sentinel_port "$g-s1")" SENTINEL MASTER "svc-$g" |
		sed -n '/^config-epoch$/{n;p;}')
	((epoch > 0)) || fail "config-epoch '$epoch'"
	assert_equal "$(record "$g-r" epoch)" "$epoch"
	# A record without the epoch, as an older redlock keeps it, counts
	# as epoch 0: held back once more (its TTL made short for the test).
	rcli_at "$g-r" EVAL "local k = 'redlock:' .. string.char(0) .. 'failover'
		redis.call('HDEL', k, 'epoch')
		redis.call('HSET', k, 'ttl', '500')" 0 >/dev/null
	run --separate-stderr redlock -v -u "$url" -t 500ms job true
	assert_success
	assert_regex "$stderr" 'failed over [0-9.]+ s ago: no grants for 0\.[0-9] s'
	assert_equal "$(record "$g-r" epoch)" "$epoch"
	run --separate-stderr redlock -v -u "$url" -t 500ms job true
	refute_regex "$stderr" 'failed over'
	sentinel_teardown "$g"
}

@test "a promoted replica that never had its first sync grants nothing before the old holder's lease could have ended" {
	unsynced_loss u plain
}

@test "a promoted replica that never synced, rejoined by the old master as its replica, still holds grants back" {
	unsynced_loss v rejoin
}
