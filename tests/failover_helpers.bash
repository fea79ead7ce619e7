# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The staged loss of a lock in a Sentinel failover, shared by
# sentinel-staged-loss.bats and sentinel-staged-waiters.bats (load
# helpers, fault_helpers and sentinel_helpers first): the failover
# guard keeps a waiter's critical section from ever overlapping the old
# holder's (the flock(1) oracle of fault_helpers.bash decides, not
# redlock).

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
	assert_failed_over_handover "$kill_ms"
	release_guarded w
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	sentinel_teardown "$g"
	rm -f "$d"/{h,w}.* "$d/intervals"
	oracle_init
}
