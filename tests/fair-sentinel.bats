#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2034,SC2154
#
# --fair through Sentinel
# (redlock-scheduling(7), "First come, first served: --fair"): a
# holder, eight waiters joining one after another, the release, and the
# order in which their commands ran; ten rounds in a row.  Cut from
# fair.bats so that the files run side by side.

load helpers
load fair_helpers
load sentinel_helpers

lifecycle main

@test "through Sentinel the waiters run in the order they came, ten rounds in a row, and nothing is left on the master" {
	sentinel_setup fs svc-fair
	SRV=(-u "$SENTINEL_URL")
	local r
	for r in 1 2 3 4 5 6 7 8 9 10; do
		assert_equal "$(one_round)" "1 2 3 4 5 6 7 8 "
	done
	wait_until -t 5 queued_is job 0
	run -0 rcli_at fs-m --scan --pattern '*fair*'
	assert_output ''
	sentinel_teardown fs
}
