#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The failover guard (HIGH AVAILABILITY in redlock-protocol(7)) holds
# every kind of grant back after a failover that lost a lock: a shared
# waiter and a semaphore waiter are held back as an exclusive one is
# (staged_loss in failover_helpers.bash).  Each test builds and stops a
# setup of its own (master, replica, three sentinels).
#
# The failover files (sentinel-failover, sentinel-staged-loss,
# sentinel-staged-waiters, sentinel-unsynced) are one file cut in four
# so that tests/run.sh runs them side by side: each test waits for a
# failover and a 12 s lease, and one after another they were the
# suite's longest file.

load helpers
load fault_helpers
load sentinel_helpers
load failover_helpers

lifecycle

@test "staged loss: a shared waiter (-s) is held back as an exclusive one is, and its fence does not go back" {
	staged_loss f record -s
}

@test "staged loss: a semaphore waiter (--limit 1) is held back too" {
	staged_loss g first --limit 1
}
