#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# -w DURATION gives up within 10 ms of DURATION on an idle machine
# (redlock(1), "Waiting"), whatever the server's hz (Redis answers a
# blocking command's timeout only at its hz, 10 by default: 100 ms
# steps).  Measured as the median of five runs, minus redlock's own
# start-up and first attempt (the median of five immediate -n runs), so
# that a shared machine's process start does not count.
#
# Never before DURATION is checked everywhere.  How late is checked to
# the man page's 10 ms by bench/wait-precision.sh, which runs this file
# alone on a quiet machine (REDLOCK_TEST_LATE_MS=10): in the suite the
# files beside this one are what it would measure, so there a run may be
# LATE_MS late (below), which still tells a wait that ends near
# DURATION from one that ends at the next try, a second later.

load helpers

lifecycle main

RUNS=5

# elapsed_us CMD...: runs CMD, prints how long it took (microseconds);
# fails unless CMD exited 1 (the conflict status).
elapsed_us() {
	local t0 t1 st=0
	t0=${EPOCHREALTIME/./}
	"$@" 2>/dev/null || st=$?
	t1=${EPOCHREALTIME/./}
	((st == 1)) || {
		echo "elapsed_us: status $st from $*" >&2
		return 1
	}
	echo $((t1 - t0))
}

# median_us CMD...: the median of RUNS timings of CMD; sets MIN_US too.
median_us() {
	local i t all=()
	for ((i = 0; i < RUNS; i++)); do
		t=$(elapsed_us "$@") || return 1
		all+=("$t")
	done
	mapfile -t all < <(printf '%s\n' "${all[@]}" | sort -n)
	MIN_US=${all[0]}
	MEDIAN_US=${all[$((RUNS / 2))]}
	ALL_US="${all[*]}"
}

test_setup() {
	run -0 --separate-stderr redlock acquire -t 5m wp
	median_us "$RL" -n wp true
	BASE_US=$MEDIAN_US
}

# LATE_MS: how late a median may be: REDLOCK_TEST_LATE_MS (10 in
# bench/wait-precision.sh, the man page's figure), else 300 ms, room for
# the suite's other files on two processors; times REDLOCK_TEST_SLOW for
# a sanitizer build (make sanitize), whose every step is slower.
LATE_MS=$((${REDLOCK_TEST_LATE_MS:-300} * ${REDLOCK_TEST_SLOW:-1}))

# assert_wait_precise MS: -w MSms against the held lock never gives up
# before MS, and its median is at most MS + LATE_MS after the base.
assert_wait_precise() {
	local ms=$1
	median_us "$RL" -w "${ms}ms" wp true
	((MIN_US >= ms * 1000)) || fail "-w ${ms}ms gave up after $((MIN_US / 1000)) ms, early (runs, us: $ALL_US)"
	local over=$(((MEDIAN_US - BASE_US) / 1000 - ms))
	((over <= LATE_MS)) ||
		fail "-w ${ms}ms: median $((MEDIAN_US / 1000)) ms, start-up $((BASE_US / 1000)) ms: $over ms late (runs, us: $ALL_US)"
}

@test "-w 100ms against a held lock gives up at 100 ms, not before, LATE_MS at most after (start-up not counted)" {
	assert_wait_precise 100
}

@test "-w 1ms against a held lock gives up within LATE_MS (start-up not counted)" {
	assert_wait_precise 1
}

@test "-w 250ms against a held lock gives up at 250 ms, not before, LATE_MS at most after (start-up not counted)" {
	assert_wait_precise 250
}

# Long enough for the first waits to carry the next attempt with them
# (wait.c, may_ride()); the last stretch must still end on time.
@test "-w 700ms against a held lock gives up at 700 ms, not before, LATE_MS at most after (start-up not counted)" {
	assert_wait_precise 700
}

@test "-w 1500ms against a held lock gives up at 1500 ms, not before, LATE_MS at most after (start-up not counted)" {
	assert_wait_precise 1500
}

@test "-w 100ms over TCP gives up at 100 ms, not before, LATE_MS at most after, too" {
	start_redis tcp --tcp
	local u
	u="redis://127.0.0.1:$(redis_port tcp)"
	run -0 --separate-stderr redlock acquire -u "$u" -t 5m wp
	median_us "$RL" -u "$u" -n wp true
	BASE_US=$MEDIAN_US
	median_us "$RL" -u "$u" -w 100ms wp true
	((MIN_US >= 100000)) || fail "gave up early: $ALL_US"
	local over=$(((MEDIAN_US - BASE_US) / 1000 - 100))
	((over <= LATE_MS)) || fail "$over ms late (runs, us: $ALL_US; start-up $BASE_US)"
	stop_redis tcp
}

# 160 ms: the start-up, a first attempt and the wait's end, each a few
# milliseconds, with room; plus LATE_MS beyond the bench's 10 ms.
@test "-w 100ms against a held lock: the best of five runs, start-up included, ends between 100 ms and 150 ms + LATE_MS" {
	hold_lock h prec
	local t0 t1 best=100000 try
	for try in 1 2 3 4 5; do
		t0=$(now_ms)
		run -1 redlock -w 100ms prec true
		t1=$(now_ms)
		(((t1 - t0) < best)) && best=$((t1 - t0))
	done
	((best >= 100)) || fail "gave up after $best ms"
	((best < $(scale_ms 150) + LATE_MS)) || fail "gave up after $best ms, not near 100"
	release_lock h
}
