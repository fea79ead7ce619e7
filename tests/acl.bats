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
# Sentinel and a Cluster is tried there too.

load helpers
load sentinel_helpers
load cluster_helpers

USER_PW='Acl-User-Pw-61f0'

lifecycle main --tcp
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	printf '%s\n' "$USER_PW" >"$BATS_FILE_TMPDIR/user.pw"
}
test_setup() {
	rcli ACL DELUSER redlock >/dev/null
	rcli ACL LOG RESET >/dev/null
	# As the user, with the password from a file, which nested redlocks
	# (re-entrance) inherit.
	REDLOCK_URL="redis://redlock@127.0.0.1:$(redis_port main)"
	export REDLOCK_URL
	export REDLOCK_PASSWORD_FILE=$BATS_FILE_TMPDIR/user.pw
}

# The ACL SETUSER line of the man page, as words, in ACL_WORDS.
read_acl_line() {
	local line
	line=$(grep -m1 '^ACL SETUSER ' "$REPO_DIR/man/redlock-protocol.7")
	[[ -n $line ]] || fail "no 'ACL SETUSER' line in man/redlock-protocol.7"
	read -r -a ACL_WORDS <<<"$line"
}

# set_user [WORD-TO-DROP]: create the user from the man page's line, with
# the test's password, without WORD-TO-DROP.
set_user() {
	local w
	local -a args=()
	read_acl_line
	for w in "${ACL_WORDS[@]:2}"; do
		[[ $w == "${1:-}" ]] && continue
		[[ $w == '>PASSWORD' ]] && w=">$USER_PW"
		args+=("$w")
	done
	[[ $(rcli ACL SETUSER "${args[@]}") == OK ]]
}

acl_denials() { rcli ACL LOG | grep -c . || true; }
blpop_waiting() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

# cycle [soft]: every verb and path of redlock once, on a fresh name,
# and every feature: shared locks, --limit, --record and runs with
# --skip-alert, --fair, --once-per, --lock-delay, --replace, stop and
# break.
# Strict (the default): each step must do what it should.  soft: run the
# steps whatever happens, waiting briefly, until Redis denies something.
cycle() {
	local soft=${1:-} tok status mode w=10
	[[ -n $soft ]] && w=1
	# Soft: once Redis has denied something, the rest can be skipped.
	denied() { [[ -n $soft ]] && (($(acl_denials) > 0)); }
	# The run form, renewing, with a nested redlock (re-entrance).
	redlock -w "$w" -t 300ms job sh -c 'sleep 0.4; redlock -w 1 "$REDLOCK_NAME" true' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	tok=$(redlock acquire -w "$w" -t 20s job) || [[ -n $soft ]] || return 1
	denied && return 0
	redlock status job >/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	[[ $(redlock list) == job* ]] || [[ -n $soft ]] || return 1
	denied && return 0
	redlock extend -t 20s job "$tok" || [[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -n job true 2>/dev/null || status=$?
	[[ $status == 1 || -n $soft ]] || return 1
	denied && return 0
	# A waiter, woken by the release.
	bg_start waiter "$RL" -w "$((w + 1))" job true
	wait_until -t "$w" blpop_waiting || [[ -n $soft ]] || return 1
	denied && return 0
	redlock release job "$tok" || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait waiter "$((w + 5))" && [[ $BG_STATUS == 0 ]] || [[ -n $soft ]] || return 1
	denied && return 0
	redlock acquire -w "$w" job >/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	redlock break job 2>/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	redlock break --fence job 2>/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	# Shared locks and a semaphore, one holder inside another's lease,
	# and the status of a shared lock.
	redlock -s -w "$w" job sh -c 'redlock -s -w 1 job2 true &&
		redlock status job >/dev/null' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	redlock --limit 2 -w "$w" -t 300ms sem sh -c 'sleep 0.4' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	# An operator asks a holder to stop (exclusive, then shared); it
	# finds the request at its next renewal, within ttl/3.
	for mode in -x -s; do
		bg_start holder "$RL" "$mode" -t 3s -w "$w" job sleep 30
		wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:job) == 1 ]]' ||
			[[ -n $soft ]] || return 1
		denied && return 0
		redlock stop -w "$w" job 2>/dev/null || [[ -n $soft ]] || return 1
		denied && return 0
		bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
		denied && return 0
	done
	# The run record: a run, then a busy attempt that --skip-alert 1
	# names, then the fleet's records, as a table and for Prometheus.
	redlock --record -w "$w" rec true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_start holder "$RL" -t 3s -w "$w" rec sleep 30
	wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:rec) == 1 ]]' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -n -q --record --skip-alert 1 rec true 2>"$BATS_TEST_TMPDIR/alert" || status=$?
	[[ $status == 1 ]] && grep -q "lock 'rec' was busy 1 times in a row: held by" \
		"$BATS_TEST_TMPDIR/alert" || [[ -n $soft ]] || return 1
	denied && return 0
	# --replace: the holder is asked to stop, and the replacement runs.
	redlock --replace -w "$w" rec true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
	[[ $(redlock runs rec) == *$'\n'rec*ok* ]] || [[ -n $soft ]] || return 1
	denied && return 0
	[[ $(redlock runs --prom rec) == *'redlock_record_runs_total{name="rec",outcome="busy"} 1'* ]] ||
		[[ -n $soft ]] || return 1
	denied && return 0
	# --fair: a waiter queues (fair.lua) behind a holder, then runs.
	bg_start holder "$RL" -t 3s -w "$w" fjob sleep 1
	wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:fjob) == 1 ]]' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	redlock --fair -w "$((w + 5))" fjob true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
	denied && return 0
	# --once-per: a success, then a skip with the conflict status.
	redlock --once-per 1h once true || [[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -E 7 --once-per 1h once true || status=$?
	[[ $status == 7 ]] || [[ -n $soft ]] || return 1
	denied && return 0
	# --lock-delay: a holder with a delay, released.
	redlock --lock-delay 2s -w "$w" delay true || [[ -n $soft ]] || return 1
	denied && return 0
	return 0
}

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

@test "every permission of the man page's ACL line is needed" {
	local w
	read_acl_line
	for w in "${ACL_WORDS[@]:3}"; do
		[[ $w == +* || $w == ~* ]] || continue
		rcli FLUSHALL >/dev/null
		rcli SCRIPT FLUSH >/dev/null
		rcli ACL LOG RESET >/dev/null
		set_user "$w"
		cycle soft
		_kill_bg_jobs
		(($(acl_denials) > 0)) || fail "nothing needs '$w': drop it from the man page"
	done
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
