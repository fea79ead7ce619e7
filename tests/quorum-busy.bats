#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# A lock held by someone else, in quorum mode (QUORUM in redlock-protocol(7)): busy is the
# conflict status (or a wait, with -w) exactly as with one server, also
# when a minority of the servers is down or stopped, and whoever holds
# it (another owner's key on some servers, a token from acquire, a
# running holder that renews); 69 only when no majority answers; the
# internal "no reply needed" never reaches the user; a waiter gets the
# lock once it is released.  The conflict verdicts are asked for many
# times, since a defect here was a race between the replies.
#
# Five private servers q1..q5, and dead ports (nothing listens there).

load helpers
load fault_helpers

TRIES=30

lifecycle q1 -- q2 -- q3 -- q4 -- q5
# shellcheck disable=SC2317 # called by lifecycle
test_setup() {
	LOCK=job$BATS_TEST_NUMBER
	KEY=redlock:$LOCK
	Q1=$(redis_sock q1) Q2=$(redis_sock q2) Q3=$(redis_sock q3)
	export Q1 Q2 Q3
	QUORUM=(-u "unix://$Q1" -u "unix://$Q2" -u "unix://$Q3")
	local n
	for n in q1 q2 q3 q4; do
		printf -v "U_$n" 'unix://%s' "$(redis_sock "$n")"
	done
	# A loopback port nobody listens on: connections are refused at once.
	DEAD="redis://127.0.0.1:$(dead_port 1)"
}

# on_all KEY: the value of KEY on q1 q2 q3, "-" for none.
on_all() {
	local n v out=''
	for n in q1 q2 q3; do
		v=$(rcli_at "$n" GET "$1")
		out+="${v:--} "
	done
	echo "${out% }"
}

# use_servers N: QARGS holds -u for q1..qN, SERVERS their names.
use_servers() {
	local i
	QARGS=()
	SERVERS=()
	for ((i = 1; i <= $1; i++)); do
		QARGS+=(-u "unix://$(redis_sock "q$i")")
		SERVERS+=("q$i")
	done
}

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

# tally_run_holder TRIES URL...: a running holder (hold_lock) takes lock
# q on the servers given, then tally TRIES -n attempts of the same.
tally_run_holder() {
	local tries=$1 a=() u
	shift
	for u in "$@"; do a+=(-u "$u"); done
	hold_lock r "${a[@]}" q
	tally "$tries" "${a[@]}" -n q true
	release_lock r
}

# --- held by another owner ------------------------------------------------------------

@test "a lock held on a majority by another owner is busy and nothing is left on the rest" {
	rcli_at q1 SET redlock:name other PX 60000 >/dev/null
	rcli_at q2 SET redlock:name other PX 60000 >/dev/null
	run -1 redlock "${QUORUM[@]}" -n name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$(on_all redlock:name)" 'other other -'
}

@test "a lock held on every server by another owner is busy, not unavailable" {
	local n
	for n in q1 q2 q3; do
		rcli_at "$n" SET redlock:name other PX 60000 >/dev/null
	done
	run -1 redlock "${QUORUM[@]}" -n name touch "$BATS_TEST_TMPDIR/ran"
	run -7 redlock "${QUORUM[@]}" -n -E 7 name true
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$(on_all redlock:name)" 'other other other'
}

@test "a lock held on a minority by another owner is still obtained" {
	rcli_at q1 SET redlock:name other PX 60000 >/dev/null
	run -0 redlock "${QUORUM[@]}" -n name sh -c 'for s in "$Q1" "$Q2" "$Q3"; do
		v=$(redis-cli -s "$s" GET "$REDLOCK_KEY"); [ "$v" = "$REDLOCK_TOKEN" ] && printf "T " || printf "%s " "${v:--}"
	done'
	assert_output 'other T T '
	# Release leaves the other owner's key alone.
	assert_equal "$(on_all redlock:name)" 'other - -'
}

@test "-w gives up on a lock held by every server with the conflict status" {
	local n t0 t1
	for n in q1 q2 q3; do
		rcli_at "$n" SET redlock:name other PX 60000 >/dev/null
	done
	t0=$(now_ms)
	run -1 redlock "${QUORUM[@]}" -w 1s name true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 900 ]
}

@test "-w gives up on a lock held by a majority" {
	rcli_at q2 SET redlock:name other PX 60000 >/dev/null
	rcli_at q3 SET redlock:name other PX 60000 >/dev/null
	run -1 redlock "${QUORUM[@]}" -w 1s name true
	assert_equal "$(on_all redlock:name)" '- other other'
}

@test "a quorum lock excludes a second quorum client" {
	hold_lock h "${QUORUM[@]}" name
	run -1 redlock "${QUORUM[@]}" -n name true
	release_lock h
	run -0 redlock "${QUORUM[@]}" -n name true
}

@test "a quorum waiter gets the lock when the holder finishes" {
	hold_lock h "${QUORUM[@]}" name
	bg_start w "$RL" "${QUORUM[@]}" name touch "$BATS_TEST_TMPDIR/w.got"
	assert stays_false -t 0.5 test -e "$BATS_TEST_TMPDIR/w.got"
	pid_alive "$(bg_pid w)" || {
		bg_wait w 1
		fail "the waiter gave up while the lock was held: status $BG_STATUS, $(bg_err w)"
	}
	release_lock h
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 10
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

# --- held, some servers down: the conflict status every time ---------------------------

@test "three servers, one a dead port, the lock held: -n is the conflict status every time, never 69" {
	hold "$U_q1" "$U_q2" "$DEAD"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$DEAD" -n q true
	assert_always 1
	# The holder was not disturbed by the failed attempts.
	assert_equal "$(rcli_at q1 GET redlock:q) $(rcli_at q2 GET redlock:q)" "$TOKEN $TOKEN"
	# The same against a running holder that renews.
	run -0 redlock release -u "$U_q1" -u "$U_q2" -u "$DEAD" q "$TOKEN"
	tally_run_holder "$TRIES" "$U_q1" "$U_q2" "$DEAD"
	assert_always 1
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
	# The same against a running holder that renews.
	run -0 redlock release -u "$U_q1" -u "$U_q2" -u "$U_q3" -u "$U_q4" q "$TOKEN"
	tally_run_holder "$TRIES" "$U_q1" "$U_q2" "$U_q3" "$U_q4"
	assert_always 1
}

@test "three servers all up, held on only two of them: -n is the conflict status every time" {
	hold "$U_q1" "$U_q2" "$DEAD"
	tally "$TRIES" -u "$U_q1" -u "$U_q2" -u "$U_q3" -n q true
	assert_always 1
}

@test "-n on a lock held on five servers exits with the conflict status, not 69" {
	use_servers 5
	start_guarded h "${QARGS[@]}" -t 5s "$LOCK"
	local i
	# Which servers answer first varies: try several times.
	for i in 1 2 3 4 5 6 7 8; do
		run --separate-stderr within 10000 redlock "${QARGS[@]}" -n "$LOCK" touch "$BATS_TEST_TMPDIR/ran"
		[[ $status == 1 ]] || fail "try $i: status $status, stderr: $stderr"
	done
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	release_guarded h
	assert_equal "$BG_STATUS" 0
}

@test "with one of five servers stopped, -n on a held lock exits 1" {
	use_servers 5
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	stop_server q5
	run --separate-stderr within 10000 redlock "${QARGS[@]}" -n "$LOCK" true
	[[ $status == 1 ]] || fail "-n: status $status, stderr: $stderr"
	release_guarded h
	assert_equal "$BG_STATUS" 0
}

@test "with one of five servers stopped, a waiter waits while the lock is held and gets it after the release" {
	use_servers 5
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	stop_server q5
	guarded_bg c "${QARGS[@]}" -t 3s -w 15 "$LOCK"
	# Still waiting a while later.
	assert stays_false -t 1 held_or_done c
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert_gets_lock c 10
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

# --- held, waiting ----------------------------------------------------------------------

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

# --- no majority answers: 69 ------------------------------------------------------------

@test "three servers, two of them dead ports: 69 every time, and the message names no internal phrase" {
	local dead2
	dead2="redis://127.0.0.1:$(dead_port 2)"
	tally 5 -u "$U_q1" -u "$DEAD" -u "$dead2" -n q true
	TRIES=5 assert_always 69
}

@test "three servers, two of them dead ports, the lock held on the live one: still 69, not the conflict status" {
	local dead2
	dead2="redis://127.0.0.1:$(dead_port 2)"
	hold "$U_q1" "$U_q2" "$DEAD"
	tally 5 -u "$U_q1" -u "$DEAD" -u "$dead2" -n q true
	TRIES=5 assert_always 69
}
