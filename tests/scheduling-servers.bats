#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The scheduling options (SCHEDULING in redlock-scheduling(7)) beyond one server: on a quorum
# of three servers (each option is safe there: see SCHEDULING in
# redlock-scheduling(7)) and on a Redis Cluster, through a node that does
# not serve the lock's slot.  Sentinel is in lock-delay.bats (through a
# failover).

load helpers
load cluster_helpers

NODES=(c1 c2 c3)

lifecycle q1 -- q2 -- q3
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	local n
	for n in "${NODES[@]}"; do
		start_cluster_node "$n" || return 1
	done
	cluster_create || return 1
}
# shellcheck disable=SC2317 # called by lifecycle
test_setup() {
	unset REDLOCK_URL
	flush_servers "${NODES[@]}"
	QUORUM=(-u "unix://$(redis_sock q1)" -u "unix://$(redis_sock q2)"
		-u "unix://$(redis_sock q3)")
}

# via_other NAME: a URL of a cluster node that does not serve NAME.
via_other() {
	local owner
	owner=$(owner_of "redlock:$1")
	echo "redis://127.0.0.1:$(redis_port "$(not_node "$owner")")"
}

# The four options, on the servers given as options ($@).
once_per_skips() {
	run -0 redlock "$@" --once-per 1h daily true
	run -1 redlock "$@" --once-per 1h daily echo again
	refute_output
	run -0 redlock "$@" -n daily true
}
lock_delay_holds() {
	local t0 took
	bg_start h "$RL" "$@" -t 1s --lock-delay 1500ms job sleep 60
	wait_until -t 5 _held "$@"
	kill -STOP "$(bg_pid h)"
	t0=$(now_ms)
	run -0 redlock "$@" -w 10 job true
	took=$(($(now_ms) - t0))
	kill -CONT "$(bg_pid h)"
	((took >= 1500)) || fail "granted $took ms after the holder stopped: no lock-delay"
	((took <= 1000 + 1500 + 1000)) || fail "granted $took ms after the holder stopped"
}
_held() { redlock "$@" status job >/dev/null; }
replace_goes_first() {
	local d=$BATS_TEST_TMPDIR
	rm -f "$d/order"
	bg_start h "$RL" "$@" -t 3s job sleep 60
	wait_until -t 5 _held "$@"
	bg_start w "$RL" "$@" -w 20 job /bin/sh -c 'echo w >>"$1/order"' sh "$d"
	wait_until -t 5 _waiting "$@"
	bg_start x "$RL" "$@" --replace -w 20 job /bin/sh -c 'echo x >>"$1/order"; sleep 0.3' sh "$d"
	bg_wait x 20
	assert_equal "$BG_STATUS" 0
	bg_wait w 20
	bg_wait h 10
	assert_equal "$BG_STATUS" 143
	assert_equal "$(tr '\n' ' ' <"$d/order")" "x w "
}
_waiting() { [[ $(redlock "$@" status job) == *'waiters: 1'* ]]; }
respawn_takes_over() {
	local d=$BATS_TEST_TMPDIR i
	for i in 1 2; do
		bg_start "s$i" "$RL" "$@" --respawn -t 1s job /bin/sh -c \
			'echo "$2" >>"$1/leaders"; exec sleep 60' sh "$d" "s$i"
	done
	wait_until -t 10 _leaders 1
	_kill_session "$(bg_pid "$(head -n 1 "$d/leaders")")"
	wait_until -t 5 _leaders 2
	assert_not_equal "$(sed -n 2p "$d/leaders")" "$(sed -n 1p "$d/leaders")"
}
_leaders() { (($(wc -l <"$BATS_TEST_TMPDIR/leaders" 2>/dev/null || echo 0) >= $1)); }

@test "a quorum of three: --once-per skips, --lock-delay holds back, --replace goes first, --respawn takes over" {
	once_per_skips "${QUORUM[@]}"
	lock_delay_holds "${QUORUM[@]}"
	replace_goes_first "${QUORUM[@]}"
	respawn_takes_over "${QUORUM[@]}"
}

@test "a Redis Cluster, through a node that does not serve the slot: the same" {
	once_per_skips -u "$(via_other daily)"
	lock_delay_holds -u "$(via_other job)"
	replace_goes_first -u "$(via_other job)"
	respawn_takes_over -u "$(via_other job)"
}
