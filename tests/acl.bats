#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The least-privilege ACL user of the man page ("Access control" in
# redlock-protocol(7)): the
# `ACL SETUSER` line is read from man/redlock-protocol.7 itself ("Access
# control"), so that a change to what redlock sends (its scripts, its
# commands, its keys) fails here until the man page says what it needs.
# Every verb runs as that user with Redis logging no denial, and every
# permission of the line is needed by some step.  A permission missing
# gives Redis's NOPERM reason.  What the man page adds for a quorum,
# Sentinel and a Cluster is tried there too.  That each permission is
# needed is checked by acl-needed-1.bats to acl-needed-3.bats, a third
# of the words each, so that they run side by side (one after another
# they took a minute and a half on a loaded machine).

load helpers
load sentinel_helpers
load cluster_helpers
load acl_helpers

lifecycle main --tcp

@test "the man page gives an ACL SETUSER line for a user with a password" {
	read_acl_line
	assert_equal "${ACL_WORDS[0]} ${ACL_WORDS[1]}" 'ACL SETUSER'
	assert_equal "${ACL_WORDS[2]}" redlock
	[[ " ${ACL_WORDS[*]} " == *' >PASSWORD '* ]] || fail "no >PASSWORD: ${ACL_WORDS[*]}"
	[[ " ${ACL_WORDS[*]} " != *' +@all '* && " ${ACL_WORDS[*]} " != *' ~* '* ]] ||
		fail "not least privilege: ${ACL_WORDS[*]}"
}

@test "every verb works as the man page's ACL user, and Redis denies it nothing" {
	set_user
	cycle || fail "a step failed as the ACL user (ACL LOG: $(rcli ACL LOG | tr '\n' ' '))"
	assert_equal "$(acl_denials)" 0
}

@test "a command the user may not run gives 69 with Redis's NOPERM reason, naming the server" {
	set_user +evalsha
	run -69 --separate-stderr redlock job touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: 127\.0\.0\.1:$(redis_port main): NOPERM .*evalsha"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	set_user +scan
	run -69 --separate-stderr redlock list
	assert_regex "${stderr_lines[0]}" "^redlock: 127\.0\.0\.1:$(redis_port main): NOPERM .*scan"
}

@test "a script refused half-way, and its undoing too, gives 69 and says the lock may stay held until its TTL" {
	# Without +get the acquire script takes the key and is refused at
	# the fencing counter; the release that would give it back is
	# refused its GET (a server does not undo a script's writes).
	set_user +get
	run -69 --separate-stderr redlock -t 1h job touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "${#stderr_lines[@]}" 2
	assert_regex "${stderr_lines[0]}" "^redlock: lock 'job' may stay held until its TTL runs out: the failed attempt could not be given back: 127\.0\.0\.1:$(redis_port main): .*can't run this command"
	assert_regex "${stderr_lines[1]}" "^redlock: 127\.0\.0\.1:$(redis_port main): .*can't run this command"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$(rcli EXISTS redlock:job)" 1
}

@test "--record as a user that may not EVAL says Redis's NOPERM, not NOSCRIPT, and leaves no record" {
	# The lock's scripts known to the server (loaded by the default
	# user), the record's not: its EVALSHA meets NOSCRIPT, then its
	# EVAL is refused.
	rcli SCRIPT FLUSH >/dev/null
	env -u REDLOCK_PASSWORD_FILE REDLOCK_URL="redis://127.0.0.1:$(redis_port main)" \
		"$RL" job true
	set_user +eval
	run -0 --separate-stderr redlock --record job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: cannot keep the run record of lock 'job': 127\.0\.0\.1:$(redis_port main): NOPERM .*eval"
	assert_equal "$(rcli --scan --pattern '*record*')" ''
}

@test "--record refused a write by the server leaves no half-written record" {
	# Without +pexpire an exclusive run that needs no renewal works, and
	# the record script is refused at its first write.
	set_user +pexpire
	run -0 --separate-stderr redlock --record -t 60s job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: cannot keep the run record of lock 'job': 127\.0\.0\.1:$(redis_port main): .*(NOPERM|can't run this command)"
	assert_equal "$(rcli --scan --pattern '*record*')" ''
}

@test "a key the user may not use gives 69 with Redis's NOPERM reason" {
	set_user
	run -69 --separate-stderr redlock -p other: job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: 127\.0\.0\.1:$(redis_port main): NOPERM .*keys"
}

@test "a waiter that may not block gives 69 with Redis's NOPERM reason, not a silent poll" {
	set_user +blpop
	hold_lock h job
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr redlock -w 20 job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: 127\.0\.0\.1:$(redis_port main): NOPERM .*blpop"
	(($(now_ms) - t0 < $(scale_ms 5000)))
	release_lock h
}

@test "a quorum works as the ACL user; the man page's +info lets it tell its servers apart" {
	local s
	local -a urls=()
	start_redis q2 --tcp
	start_redis q3 --tcp
	for s in main q2 q3; do
		use_redis "$s"
		rcli ACL DELUSER redlock >/dev/null
		rcli ACL LOG RESET >/dev/null
		set_user
		urls+=(-u "redis://redlock@127.0.0.1:$(redis_port "$s")")
	done
	# Without it the lock works, but each server refuses INFO, so the
	# check that the URLs reach distinct servers goes without their
	# run ids (the refusal is in the server's ACL log).
	run -0 redlock "${urls[@]}" job touch "$BATS_TEST_TMPDIR/ran"
	assert [ -e "$BATS_TEST_TMPDIR/ran" ]
	for s in main q2 q3; do
		use_redis "$s"
		assert_equal "$s: $(rcli ACL LOG | grep -cx info)" "$s: 1"
		[[ $(rcli ACL SETUSER redlock +info) == OK ]]
		rcli ACL LOG RESET >/dev/null
	done
	run -0 redlock "${urls[@]}" -t 300ms job sh -c 'sleep 0.4'
	run -0 --separate-stderr redlock acquire "${urls[@]}" job
	local tok=$output
	run -0 redlock status "${urls[@]}" job
	run -0 redlock release "${urls[@]}" job "$tok"
	for s in main q2 q3; do
		use_redis "$s"
		assert_equal "$s: $(acl_denials)" "$s: 0"
	done
	use_redis main
}

@test "through Sentinel, the ACL user works with the man page's additions for Sentinel, and not without them" {
	local url tok
	sentinel_setup acl redlock-acl
	use_redis acl-m
	set_user
	rcli ACL LOG RESET >/dev/null
	url=${SENTINEL_URL/redis+sentinel:\/\//redis+sentinel:\/\/redlock@}
	# Without them: asking the master its role is refused.
	run -69 --separate-stderr redlock -u "$url" job touch "$BATS_TEST_TMPDIR/ran"
	assert_regex "${stderr_lines[0]}" "NOPERM .*role"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# Each of them is needed.
	local w
	for w in role hmget info; do
		set_user
		rcli ACL SETUSER redlock +role +hmget +info "-$w" >/dev/null
		run -69 --separate-stderr redlock -u "$url" job true
		assert_regex "${stderr_lines[0]}" "NOPERM|can't run"
	done
	[[ $(rcli ACL SETUSER redlock +role +hmget +info) == OK ]]
	rcli ACL LOG RESET >/dev/null
	run -0 redlock -u "$url" -t 300ms job sh -c 'sleep 0.4'
	tok=$(redlock acquire -u "$url" job)
	run -0 redlock status -u "$url" job
	run -0 redlock release -u "$url" job "$tok"
	assert_equal "$(acl_denials)" 0
	sentinel_teardown acl
}

@test "on a Cluster, the ACL user works with the man page's line and +asking, through any node" {
	local n name other
	local -a NODES=(k1 k2 k3)
	for n in "${NODES[@]}"; do
		start_cluster_node "$n"
	done
	cluster_create
	for n in "${NODES[@]}"; do
		use_redis "$n"
		set_user
		[[ $(rcli ACL SETUSER redlock +asking) == OK ]]
		rcli ACL LOG RESET >/dev/null
	done
	name=$(name_on k2)
	other="redis://redlock@127.0.0.1:$(redis_port k1)"
	# Through a node that does not serve NAME: MOVED, then the owner.
	run -0 redlock -u "$other" -t 300ms "$name" sh -c 'sleep 0.4'
	run -0 --separate-stderr redlock acquire -u "$other" "$name"
	run -0 redlock list -u "$other"
	assert_output --regexp "^$name "
	run -0 redlock break -u "$other" "$name"
	for n in "${NODES[@]}"; do
		use_redis "$n"
		assert_equal "$n: $(acl_denials)" "$n: 0"
	done
}
