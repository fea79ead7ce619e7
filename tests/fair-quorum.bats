#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2034,SC2154
#
# --fair on a quorum of three servers
# (redlock-scheduling(7), "First come, first served: --fair"): a
# holder, eight waiters joining one after another, the release, and the
# order in which their commands ran; ten rounds in a row.  Cut from
# fair.bats so that the files run side by side.

load helpers
load fair_helpers

lifecycle main -- q2 -- q3

@test "on a quorum of three the waiters run in the order they came, ten rounds in a row" {
	SRV=(-u "unix://$REDIS_SOCK" -u "unix://$(redis_sock q2)" -u "unix://$(redis_sock q3)")
	local r
	for r in 1 2 3 4 5 6 7 8 9 10; do
		assert_equal "$(one_round)" "1 2 3 4 5 6 7 8 "
	done
	# Every server ordered the queue alike, and kept nothing.
	for r in main q2 q3; do
		run -0 rcli_at "$r" --scan --pattern '*fair*'
		assert_output ''
	done
}
