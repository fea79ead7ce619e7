#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The failover guard (HIGH AVAILABILITY in redlock-protocol(7)) after a
# failover that lost a lock: the holder exits 75 and a waiter's
# critical section never overlaps the old holder's (staged_loss in
# failover_helpers.bash), whether or not an earlier grant reached the
# replica.  Each test builds and stops a setup of its own (master,
# replica, three sentinels).  These run REDLOCK_SOAK times (default 1;
# `make soak` runs them 10 times).
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
