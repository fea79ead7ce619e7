#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Sentinel failovers (HIGH AVAILABILITY in redlock-protocol(7)): a
# holder follows a failover, a waiter rides one out, and the failover
# guard: after a failover that lost a lock, a waiter's critical section
# never overlaps the old holder's (the flock(1) oracle of
# fault_helpers.bash decides, not redlock), also when the promoted
# replica never finished its first sync.  Each test builds and stops a
# setup of its own (master, replica, three sentinels); sentinel.bats
# holds the tests that fail nothing over, so that the two files run
# side by side.  The staged-loss tests run REDLOCK_SOAK times (default
# 1; `make soak` runs them 10 times).

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

# staged_loss G VARIANT: the replica misses the holder's grant (its
# replication cut), the master dies right after the grant, the replica
# is promoted.  The holder must exit 75, and a waiter that asks the new
# master as soon as a sentinel names it must get the lock only after the
# holder's whole command is gone.  Without the guard it would get it at
# once: the holder's first renewal, which finds the key missing, is due
# only ttl/3 = 4 s after the grant, and the failover takes 2 to 3 s.
# VARIANT "record": an earlier grant reached the replica (its record
# names the old master); "first": the lost grant was the master's first
# (the replica has no record, but was a replica).  Further arguments are
# the waiter's options (-s, --limit 1: the guard holds every kind of
# grant back).
staged_loss() {
	local g=$1 variant=$2 url kill_ms d=$BATS_TEST_TMPDIR
	local -a wopts=("${@:3}")
	sentinel_setup "$g" "svc-$g" || return 1
	url=$SENTINEL_URL
	if [[ $variant == record ]]; then
		run -0 redlock -u "$url" -t 12s warmup true
		wait_until caught_up "$g"
		[[ -n $(record "$g-r" replid) ]] || fail "no record on the replica"
	fi
	pause_replication "$g"
	start_guarded h -u "$url" -t 12s job
	assert_equal "$(rcli_at "$g-r" EXISTS redlock:job)" 0
	kill_ms=$(now_ms)
	kill_redis "$g-m"
	promoted "$g" "svc-$g"
	guarded_bg w -v -u "$url" -t 12s -w 40 "${wopts[@]}" job
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	assert_gone_by h $((kill_ms + 12000)) "the end of the lease granted before the failover"
	assert_gets_lock w 40
	(($(start_ms w) >= $(freed_ms h))) ||
		fail "the waiter started at $(start_ms w), before the holder was gone at $(freed_ms h)"
	(($(cat "$d/w.fence") > $(cat "$d/h.fence"))) ||
		fail "fence $(cat "$d/w.fence") after $(cat "$d/h.fence")"
	release_guarded w
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	sentinel_teardown "$g"
	rm -f "$d"/{h,w}.* "$d/intervals"
	oracle_init
}

@test "staged loss after a replicated grant: the holder exits 75 and the waiter never overlaps it" {
	# (not $i: bats's run uses a global i)
	local rep
	for ((rep = 0; rep < ${REDLOCK_SOAK:-1}; rep++)); do
		staged_loss "d$rep" record
	done
}

@test "staged loss of a master's first grant: the holder exits 75 and the waiter never overlaps it" {
	# (not $i: bats's run uses a global i)
	local rep
	for ((rep = 0; rep < ${REDLOCK_SOAK:-1}; rep++)); do
		staged_loss "e$rep" first
	done
}

@test "staged loss: a shared waiter (-s) is held back as an exclusive one is, and its fence does not go back" {
	staged_loss f record -s
}

@test "staged loss: a semaphore waiter (--limit 1) is held back too" {
	staged_loss g first --limit 1
}

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
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	assert_gone_by h $((kill_ms + 12000)) "the end of the lease granted before the failover"
	assert_gets_lock w 40
	(($(start_ms w) >= $(freed_ms h))) ||
		fail "the waiter started at $(start_ms w), before the holder was gone at $(freed_ms h)"
	(($(start_ms w) >= $(start_ms h) + 12000)) ||
		fail "the waiter started at $(start_ms w), before the holder's lease (from $(start_ms h), 12 s) could have ended"
	(($(cat "$d/w.fence") > $(cat "$d/h.fence"))) ||
		fail "fence $(cat "$d/w.fence") after $(cat "$d/h.fence")"
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
