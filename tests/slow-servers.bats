#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Servers that are slow, far away or stalled (redlock(1), EXIT STATUS; redlock(1), "Running a command under the lock"): -w bounds the
# whole wait, failures included, and a server whose round trip is a good
# part of the TTL is slow, not unavailable, as long as the lease can
# afford its answers.

load helpers
load fault_helpers

lifecycle main --enable-debug-command yes

@test "-w bounds the wait when the server stalls: a -w 2s waiter gives up by 2 s, and never runs its command late" {
	local d=$BATS_TEST_TMPDIR t0 t1
	hold_lock h stall
	bg_start s redis-cli -s "$REDIS_SOCK" DEBUG SLEEP 4
	t0=$(now_ms)
	run redlock -w 2s stall sh -c ': >"$1/ran"' cmd "$d"
	t1=$(now_ms)
	((status != 0)) || fail "the waiter ran its command"
	[[ ! -e $d/ran ]] || fail "the command ran"
	((t1 - t0 < 2600)) || fail "gave up after $((t1 - t0)) ms, not by 2 s"
	bg_wait s
}

@test "a server 60 ms away each way is slow, not unavailable: -t 1s acquires, renews and releases" {
	start_proxy main
	proxy_set delay 120
	run -0 redlock -u "$PROXY_URL" -t 1s far sh -c 'sleep 1.6'
	refute_output --partial 'cannot renew'
	refute_output --partial lost
	assert key_absent redlock:far
}

@test "a reply that never comes is named in the message" {
	start_proxy main
	proxy_set blackhole
	run -69 redlock -u "$PROXY_URL" -t 1s -n gone true
	assert_output --partial 'no reply in time'
	assert_output --partial 'slow or far away'
}
