#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Fault injection against one server (redlock(1), EXIT STATUS, status 75): a server
# that hangs, pauses its clients, restarts or kills connections; replies
# delayed or blackholed by tests/proxy.py; redlock itself killed or
# stopped.  Overlaps are caught by the kernel through the flock(1) oracle
# of fault_helpers.bash, not by redlock; "gone by the deadline" is the
# time the holder's last process died, compared with the lease.
#
# A lease that starts at S (the acquire or renewal that was sent last)
# ends at S + ttl on the server at the earliest, so the whole command
# must be gone by then.  The tests stop things right after the command
# started, before the first renewal (ttl/3), so S is the acquire, which
# was sent before the command recorded its start time: the command must
# be gone by its start + ttl.  Should the machine be so slow that the
# fault came later, the time of the fault is used instead (no renewal can
# have been sent, and answered, after it).

load helpers
load fault_helpers
lifecycle main

# key_is KEY VALUE
key_is() { [[ $(rcli GET "$1") == "$2" ]]; }
key_is_not() { ! key_is "$@"; }

# A waiter (one server) sits in BLPOP on the wake list.
waiter_blocked() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

@test "a server stopped past the TTL: the command is gone by the deadline, redlock exits 75, the next holder does not overlap" {
	start_guarded h -t 3s job
	local p ref gc
	gc=$(cat "$BATS_TEST_TMPDIR/h.gchild")
	stop_server main
	p=$(now_ms)
	ref=$(lease_ref h "$p" 3000)
	assert_gone_by h $((ref + 3000)) "the lease deadline"
	assert pid_dead "$gc"
	after_stopped_server h "$p"
	assert key_absent redlock:job
}

@test "CLIENT PAUSE ALL past the TTL: the key cannot expire, yet the command is gone by start + TTL" {
	start_guarded h -t 3s job
	local p ref
	assert_equal "$(rcli CLIENT PAUSE 3500 ALL)" OK
	p=$(now_ms)
	ref=$(lease_ref h "$p" 3000)
	assert_gone_by h $((ref + 3000)) "start + TTL"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	# The pause (the scenario) ends; a new holder gets the expired lock.
	scenario_sleep_until $((p + 3600))
	guarded_bg c -t 3s -w 10 job
	assert_gets_lock c 15
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "a server stopped for less than the TTL is survived: same token, exit 0" {
	start_guarded h -t 3s job
	local tok
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	stop_server main
	# The hiccup (the scenario) spans the first renewal.
	sleep 1.3
	cont_server main
	# Renewed again: the lock outlives the original lease.
	assert stays_false -t 3 key_is_not redlock:job "$tok"
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:job
}

@test "a server restarted without persistence while the lock is held: lost at once, exit 75" {
	# TTL 9 s: renewals every 3 s; stopping at the lease's end would take
	# about 5 s longer than noticing the loss at the next renewal.
	start_guarded h -t 9s job
	local r0 r1 t1
	r0=$(now_ms)
	restart_server main
	r1=$(now_ms)
	assert key_absent redlock:job
	bg_wait h 20
	t1=$(now_ms)
	assert_equal "$BG_STATUS" 75
	assert_gone_by h "$t1" "redlock exited"
	(((t1 - r0) < $(scale_ms 4500))) ||
		fail "redlock exited $((t1 - r0)) ms after the restart began (restart took $((r1 - r0)) ms): not at once"
	assert pid_dead "$(cat "$BATS_TEST_TMPDIR/h.gchild")"
}

@test "a server restarted with its data (same key, new run id) does not by itself lose the lock" {
	start_guarded h -t 1500ms job
	local tok dir
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	dir=$(dirname "$(redis_sock main)")
	assert_equal "$(rcli SAVE)" OK
	restart_server main
	rm -f "$dir/dump.rdb"
	# The key came back with its token: renewals find it and go on.
	assert key_is redlock:job "$tok"
	assert stays_false -t 2 key_is_not redlock:job "$tok"
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:job
}

@test "CLIENT KILL TYPE normal once: redlock reconnects, keeps the lock with the same token and exits 0" {
	start_guarded h -t 1s job
	local tok n
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	# The one connection, which the renewal thread took over, is open.
	wait_until -t 5 eval '(($(redlock_conns main) >= 1))'
	n=$(rcli CLIENT KILL TYPE normal)
	assert [ "$n" -ge 1 ]
	# Two TTLs later it is still ours: the renewals went on.
	assert stays_false -t 2 key_is_not redlock:job "$tok"
	release_guarded h
	assert_equal "$BG_STATUS" 0
	# The release reconnected too.
	assert key_absent redlock:job
}

@test "CLIENT KILL TYPE normal repeatedly: redlock keeps reconnecting and keeps the lock" {
	start_guarded h -t 1s job
	local tok i end
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	end=$(($(now_ms) + 2500))
	i=0
	while (($(now_ms) < end)); do
		rcli CLIENT KILL TYPE normal >/dev/null
		key_is redlock:job "$tok" || fail "round $i: the key is $(rcli GET redlock:job)"
		i=$((i + 1))
		sleep 0.1 # the rate of the fault, not synchronisation
	done
	assert [ "$i" -ge 8 ]
	assert key_is redlock:job "$tok"
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:job
}

@test "replies delayed by less than the per-command timeout keep the lock" {
	start_proxy main
	# TTL 2 s: per-command timeouts are ttl/10 = 200 ms.
	proxy_set delay 80
	start_guarded h -t 2s -u "$PROXY_URL" job
	local tok
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	assert key_is redlock:job "$tok"
	assert stays_false -t 3 key_is_not redlock:job "$tok"
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:job
}

@test "a blackholed connection: the command is gone before the key expires, exit 75, the waiting holder does not overlap" {
	start_proxy main
	start_guarded h -t 3s -u "$PROXY_URL" job
	# A contender straight to the server, already waiting for the lock.
	guarded_bg c -t 3s -w 15 job
	wait_until -t 10 waiter_blocked
	local p ref
	proxy_set blackhole
	p=$(now_ms)
	ref=$(lease_ref h "$p" 3000)
	assert_gone_by h $((ref + 3000)) "the lease deadline"
	assert pid_dead "$(cat "$BATS_TEST_TMPDIR/h.gchild")"
	# The key expires on the server and the waiter gets it at once.
	assert_gets_lock c 10
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	assert key_is redlock:job "$(cat "$BATS_TEST_TMPDIR/c.token")"
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "redlock SIGKILLed: its command and a background grandchild die at once, the next holder gets the lock within the TTL" {
	start_guarded h -t 2s job
	local child gc k got
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	gc=$(cat "$BATS_TEST_TMPDIR/h.gchild")
	guarded_bg c -t 2s -w 10 job
	wait_until -t 10 waiter_blocked
	k=$(now_ms)
	kill -KILL "$(bg_pid h)"
	assert_gone_by h $((k + $(scale_ms 500))) "redlock was killed"
	assert pid_dead "$child"
	assert pid_dead "$gc"
	bg_wait h 5
	assert_equal "$BG_STATUS" 137
	assert_gets_lock c 10
	got=$(start_ms c)
	(((got - k) <= 2000 + $(scale_ms 1000))) ||
		fail "the next holder got the lock $((got - k)) ms after the kill"
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "redlock SIGSTOPped past the TTL: the command is gone by the deadline, then redlock exits 75 without touching the next holder's lock" {
	start_guarded h -t 2s job
	guarded_bg c -t 2s -w 10 job
	wait_until -t 10 waiter_blocked
	local p ref
	stop_pid "$(bg_pid h)"
	p=$(now_ms)
	ref=$(lease_ref h "$p" 2000)
	assert_gone_by h $((ref + 2000)) "the lease deadline"
	assert pid_dead "$(cat "$BATS_TEST_TMPDIR/h.gchild")"
	# While redlock is still stopped the key expires and the waiter has it.
	assert_gets_lock c 10
	cont_pid "$(bg_pid h)"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	assert key_is redlock:job "$(cat "$BATS_TEST_TMPDIR/c.token")"
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "on a loss the command 'sh -c \"sleep 100 & wait\"' and its background sleep are both gone by the deadline" {
	local d=$BATS_TEST_TMPDIR
	: >"$d/h.alive"
	bg_start h "$RL" -t 2s job flock "$d/h.alive" sh -c '
		date +%s%3N >"$1.start"; sleep 100 & echo $! >"$1.gchild"; : >"$1.held"; wait' sh "$d/h"
	wait_for_file "$d/h.held" 20
	watch_free h
	local gc p ref
	gc=$(cat "$d/h.gchild")
	stop_server main
	p=$(now_ms)
	ref=$(lease_ref h "$p" 2000)
	assert_gone_by h $((ref + 2000)) "the lease deadline"
	assert pid_dead "$gc"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
}

@test "100 contenders: every one gets the lock once and no two critical sections overlap" {
	local n=100
	[[ -z ${REDLOCK_WRAPPER:-} ]] || n=10
	run_contenders "$n" many
	assert key_absent redlock:many
}
