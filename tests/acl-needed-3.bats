#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Every permission of the man page's ACL SETUSER line ("Access control"
# in redlock-protocol(7)) is needed: without it, Redis denies some step
# of a cycle through every verb and feature (cycle in acl_helpers.bash).
# The words are shared among acl-needed-1.bats to acl-needed-3.bats,
# which run side by side; this file takes the third of every three.

load helpers
load acl_helpers

lifecycle main --tcp

@test "every permission of the man page's ACL line is needed (3 of 3)" {
	each_needed 2 3
}
