#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Mutual exclusion under contention (redlock(1)): many processes, one lock.

load helpers

lifecycle main

# Under a slow wrapper (valgrind) the default workload would take ages.
if [[ -n ${REDLOCK_WRAPPER:-} ]]; then
	: "${CONTENTION_PROCS:=4}" "${CONTENTION_ITERS:=5}"
else
	: "${CONTENTION_PROCS:=8}" "${CONTENTION_ITERS:=50}"
fi

@test "8 processes x 50 locked read-modify-writes of a counter lose no update" {
	local d=$BATS_TEST_TMPDIR p procs=$CONTENTION_PROCS iters=$CONTENTION_ITERS
	export COUNTER_DIR=$d
	echo 0 >"$d/counter"
	: >"$d/fences"
	for ((p = 1; p <= procs; p++)); do
		# shellcheck disable=SC2016
		bg_start "w$p" bash -c '
			for ((i = 0; i < $1; i++)); do
				"$RL" -t 10s count -c "
					n=\$(cat \"\$COUNTER_DIR/counter\")
					echo \$((n + 1)) >\"\$COUNTER_DIR/counter\"
					echo \"\$REDLOCK_FENCE\" >>\"\$COUNTER_DIR/fences\"" ||
					{ echo "iteration $i: redlock exited $?" >&2; exit 1; }
			done' worker "$iters"
	done
	# One deadline for the whole run.
	local deadline=$(($(now_ms) + $(scale_ms 240000))) left
	for ((p = 1; p <= procs; p++)); do
		left=$(((deadline - $(now_ms)) / 1000))
		((left > 0)) || left=1
		bg_wait "w$p" "$left" || fail "worker $p did not finish in time"
		assert_equal "$BG_STATUS" 0 || fail "worker $p: $(bg_err "w$p")"
	done
	assert_equal "$(cat "$d/counter")" $((procs * iters))
	# Every grant got a larger fencing token than the one before it.
	assert_equal "$(wc -l <"$d/fences")" $((procs * iters))
	run awk 'NR > 1 && $1 + 0 <= prev + 0 { print "line " NR ": " $1 " after " prev; bad = 1 }
		{ prev = $1 } END { exit bad }' "$d/fences"
	assert_success
	assert key_absent redlock:count
}

@test "of 8 simultaneous -n runs exactly one gets the lock" {
	local d=$BATS_TEST_TMPDIR p
	for p in 1 2 3 4 5 6 7 8; do
		bg_start "n$p" "$RL" -n race sh -c '
			: >"$1.won"; . "$TESTS_DIR/lib/await.sh"
			await_file "$2"' \
			sh "$d/n$p" "$d/release"
	done
	# Wait until seven have given up (the winner waits for "release").
	wait_until -t 30 eval '(( $(for p in 1 2 3 4 5 6 7 8; do pid_dead "$(bg_pid "n$p")" && echo; done | wc -l) >= 7 ))'
	assert_equal "$(find "$d" -name '*.won' | wc -l)" 1
	: >"$d/release"
	local ok=0 busy=0
	for p in 1 2 3 4 5 6 7 8; do
		bg_wait "n$p" 20
		case $BG_STATUS in
		0) ok=$((ok + 1)) ;;
		1) busy=$((busy + 1)) ;;
		*) fail "run $p exited $BG_STATUS: $(bg_err "n$p")" ;;
		esac
	done
	assert_equal "$ok $busy" '1 7'
}

# A blocked waiter's connection: in BLPOP (flags b) with bytes left in
# its query buffer, its next attempt.
attempt_queued() {
	rcli CLIENT LIST | grep -Eq 'flags=[a-zA-Z]*b[a-zA-Z]* .*qbuf=[1-9][0-9]* .*cmd=blpop'
}

@test "a waiter blocks with its next attempt queued behind its BLPOP, and the holder's release hands it the lock" {
	local d=$BATS_TEST_TMPDIR
	hold_lock h -t 10s ride
	bg_start w "$RL" -t 10s ride sh -c 'echo "$REDLOCK_FENCE" >"$1"' sh "$d/w.fence"
	wait_until -t 10 attempt_queued ||
		fail "no blocked waiter with an attempt queued: $(rcli CLIENT LIST)"
	release_lock h
	assert_equal "$BG_STATUS" 0
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
	[[ -s $d/w.fence ]] || fail "the waiter's command did not run: $(bg_err w)"
	assert key_absent redlock:ride
}

@test "waiters interrupted as the lock is released never keep it: it is free at once" {
	local i d=$BATS_TEST_TMPDIR
	for ((i = 0; i < 6; i++)); do
		hold_lock h -t 60s ride
		bg_start w "$RL" -t 60s ride true
		wait_until -t 10 attempt_queued || fail "round $i: the waiter does not block: $(rcli CLIENT LIST)"
		# Either order: the attempt queued behind the BLPOP may run
		# just before the connection closes; the waiter gives it back.
		if ((i % 2)); then
			: >"$d/h.release"
			# The waiter may have got the lock and ended already.
			kill -INT "$(bg_pid w)" 2>/dev/null || true
		else
			kill -INT "$(bg_pid w)"
			: >"$d/h.release"
		fi
		bg_wait h 20 && bg_wait w 20 || fail "round $i: a process hangs"
		wait_until -t 5 key_absent redlock:ride ||
			fail "round $i: the lock stays taken by $(rcli GET redlock:ride)"
	done
}
