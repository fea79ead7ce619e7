#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# A busy lock is busy in quorum mode too (SPEC §5, issue 14 item 2): held
# by someone else, it is the conflict status (or a wait, with -w) exactly
# as with one server, also when a minority of the servers is down; 69 only
# when no majority answers; the internal "no reply needed" never reaches
# the user.  Every verdict is asked for many times, since the defect was
# a race between the replies.

load helpers

TRIES=30

setup_file() {
	common_setup_file
	start_redis q1
	start_redis q2
	start_redis q3
	start_redis q4
	use_redis q1
}
teardown_file() { common_teardown_file; }
setup() {
	common_setup q2 q3 q4
	local n
	for n in q1 q2 q3 q4; do
		printf -v "U_$n" 'unix://%s' "$(redis_sock "$n")"
	done
	# A loopback port nobody listens on: connections are refused at once.
	DEAD="redis://127.0.0.1:$(free_port)"
}
teardown() { common_teardown; }

# hold URL...: another holder takes lock q for five minutes on the
# servers given; sets TOKEN.
hold() {
	local a=() u
	for u in "$@"; do a+=(-u "$u"); done
	run -0 --separate-stderr redlock acquire -t 5m "${a[@]}" q
	TOKEN=$output
	[[ $TOKEN =~ $UUID_RE ]] || fail "acquire printed '$TOKEN'"
}

# tally TRIES REDLOCK-ARGS...: runs redlock TRIES times; sets STATUSES
# (one "status count" line per distinct status) and ERRS (every stderr
# line, deduplicated with counts).
tally() {
	local n=$1 i d=$BATS_TEST_TMPDIR
	shift
	: >"$d/statuses"
	: >"$d/errs"
	for ((i = 0; i < n; i++)); do
		local st=0
		"$RL" "$@" 2>>"$d/errs" || st=$?
		echo "$st" >>"$d/statuses"
	done
	STATUSES=$(sort -n "$d/statuses" | uniq -c | awk '{ print $2 " x" $1 }' | tr '\n' ' ')
	ERRS=$(sort "$d/errs" | uniq -c)
}

# assert_always STATUS: every try of the last tally ended with STATUS, and
# no diagnostic leaked the internal phrase.
assert_always() {
	[[ $STATUSES == "$1 x$TRIES " ]] ||
		fail "statuses over $TRIES tries: $STATUSES(want $1 every time); stderr: $ERRS"
	if grep -q 'no reply needed' "$BATS_TEST_TMPDIR/errs"; then
		fail "stderr has the internal 'no reply needed': $ERRS"
	fi
}

@test "three servers, one a dead port, the lock held: -n is the conflict status every time, never 69" {
	hold "$U_q1" "$U_q2" "$DEAD"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$DEAD" -n q true
	assert_always 1
	# The holder was not disturbed by the failed attempts.
	assert_equal "$(rcli_at q1 GET redlock:q) $(rcli_at q2 GET redlock:q)" "$TOKEN $TOKEN"
}

@test "three servers, one a dead port, the lock held: -E 7 makes the conflict status 7 every time" {
	hold "$U_q1" "$U_q2" "$DEAD"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$DEAD" -E 7 -n q true
	assert_always 7
}

@test "two servers, both up, the lock held: -n is the conflict status every time" {
	hold "$U_q1" "$U_q2"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -n q true
	assert_always 1
}

@test "four servers, all up, the lock held: -n is the conflict status every time" {
	hold "$U_q1" "$U_q2" "$U_q3" "$U_q4"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$U_q3" -u "$U_q4" -n q true
	assert_always 1
}

@test "three servers all up, held on only two of them: -n is the conflict status every time" {
	hold "$U_q1" "$U_q2" "$DEAD"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$U_q3" -n q true
	assert_always 1
}

# waits_then_conflict URL...: -w 300ms waits at least 300 ms, then exits 1
# (five tries).
waits_then_conflict() {
	local a=() u i t0 el st err=$BATS_TEST_TMPDIR/w.err
	for u in "$@"; do a+=(-u "$u"); done
	for ((i = 0; i < 5; i++)); do
		t0=$(now_ms)
		st=0
		"$RL" "${a[@]}" -w 300ms q true 2>"$err" || st=$?
		el=$(($(now_ms) - t0))
		[[ $st == 1 ]] || fail "try $i: status $st after $el ms: $(cat "$err")"
		((el >= 300)) || fail "try $i: gave up after $el ms, before the 300 ms of -w"
		! grep -q 'no reply needed' "$err" || fail "stderr: $(cat "$err")"
	done
}

@test "three servers, one a dead port, the lock held: -w 300ms waits, then exits 1 after at least 300 ms" {
	hold "$U_q1" "$U_q2" "$DEAD"
	waits_then_conflict "$U_q1" "$U_q2" "$DEAD"
}

@test "four servers, all up, the lock held: -w 300ms waits, then exits 1 after at least 300 ms" {
	hold "$U_q1" "$U_q2" "$U_q3" "$U_q4"
	waits_then_conflict "$U_q1" "$U_q2" "$U_q3" "$U_q4"
}

@test "three servers, one a dead port, the lock held: waiters without -w keep waiting and get the lock once it is released" {
	hold "$U_q1" "$U_q2" "$DEAD"
	local i
	for ((i = 0; i < 5; i++)); do
		bg_start "w$i" "$RL" -u "$U_q1" -u "$U_q2" -u "$DEAD" q true
	done
	stays_false -t 1 any_waiter_gone || {
		for ((i = 0; i < 5; i++)); do
			pid_dead "$(bg_pid "w$i")" || continue
			bg_wait "w$i" 1
			fail "waiter $i gave up (status $BG_STATUS): $(bg_err "w$i")"
		done
	}
	run -0 redlock release -u "$U_q1" -u "$U_q2" -u "$DEAD" q "$TOKEN"
	for ((i = 0; i < 5; i++)); do
		bg_wait "w$i" 20
		assert_equal "$BG_STATUS" 0
	done
}

any_waiter_gone() {
	local i
	for ((i = 0; i < 5; i++)); do
		pid_dead "$(bg_pid "w$i")" && return 0
	done
	return 1
}

@test "three servers, two of them dead ports: 69 every time, and the message names no internal phrase" {
	local dead2
	dead2="redis://127.0.0.1:$(free_port)"
	tally 5 -u "$U_q1" -u "$DEAD" -u "$dead2" -n q true
	TRIES=5 assert_always 69
}

@test "three servers, two of them dead ports, the lock held on the live one: still 69, not the conflict status" {
	local dead2
	dead2="redis://127.0.0.1:$(free_port)"
	hold "$U_q1" "$U_q2" "$DEAD"
	tally 5 -u "$U_q1" -u "$DEAD" -u "$dead2" -n q true
	TRIES=5 assert_always 69
}
