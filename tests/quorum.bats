#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Several servers: the Redlock quorum (SPEC §5), with servers stopped
# (SIGSTOP: they accept connections but never answer) before and while
# the lock is held; status 69 when no majority answers (SPEC §3); the
# fencing token across grants by different majorities (SPEC §4); status
# and break over several servers (SPEC §6).  Overlaps are caught by the
# flock(1) oracle of fault_helpers.bash.
#
# Five private servers q1..q5; the three-server tests use q1..q3.  A
# server resumed after a test may still run requests that were queued
# while it was stopped, so every test uses a lock name of its own.

load helpers
load fault_helpers

setup_file() {
	common_setup_file
	local i
	for i in 1 2 3 4 5; do
		start_redis "q$i"
	done
	use_redis q1
}
teardown_file() { common_teardown_file; }
setup() {
	common_setup q2 q3 q4 q5
	oracle_init
	LOCK=job$BATS_TEST_NUMBER
	KEY=redlock:$LOCK
}
teardown() {
	cont_all
	common_teardown
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

# keys_on VALUE SERVER...: KEY holds VALUE on every SERVER ('' = absent).
keys_on() {
	local want=$1 s
	shift
	for s in "$@"; do
		[[ $(rcli_at "$s" GET "$KEY") == "$want" ]] || return 1
	done
}

# elapsed_below MS T0: less than MS (scaled) have passed since T0.
elapsed_below() {
	local e=$(($(now_ms) - $2))
	((e < $(scale_ms "$1"))) || {
		echo "took $e ms, limit $1 ms" >&2
		return 1
	}
}

# The command that proves where the lock is: the key's value on each
# server given as an argument, then the token.
SHOW_KEYS='for s; do redis-cli -s "$s" GET "$REDLOCK_KEY"; done; echo "token $REDLOCK_TOKEN"'

socks() {
	local s
	for s in "$@"; do
		redis_sock "$s"
	done
}

# assert_held_everywhere N: a run on q1..qN sees its token on all of them
# and leaves none behind.
assert_held_everywhere() {
	use_servers "$1"
	local -a sk
	mapfile -t sk < <(socks "${SERVERS[@]}")
	run -0 within 20000 redlock "${QARGS[@]}" -t 3s "$LOCK" sh -c "$SHOW_KEYS" sh "${sk[@]}"
	local tok=${lines[$1]#token }
	assert_regex "$tok" "$UUID_RE"
	local i
	for ((i = 0; i < $1; i++)); do
		assert_equal "${lines[i]}" "$tok"
	done
	assert keys_on '' "${SERVERS[@]}"
}

# run_contenders N: N redlocks on q1..q5 (QARGS) with a short critical
# section under the oracle; statuses in $d/statuses, "start end fence" in
# $d/intervals.  Bounded.
run_contenders() {
	local d=$BATS_TEST_TMPDIR n=$1
	export CS_DIR=$d
	cat >"$d/cs.sh" <<'EOF'
s=$(date +%s%3N)
sleep 0.01
echo "$s $(date +%s%3N) $REDLOCK_FENCE" >>"$CS_DIR/intervals"
EOF
	: >"$d/intervals"
	: >"$d/statuses"
	bg_start driver bash -c '
		n=$1 d=$2 name=$3
		shift 3
		for ((i = 1; i <= n; i++)); do
			{ "$RL" "$@" -t 3s -w 60 "$name" -c "flock -n -E 99 \"\$ORACLE\" /bin/sh \"\$CS_DIR/cs.sh\"" 2>"$d/cs$i.err"
			  echo "$i $?" >>"$d/statuses"; } &
		done
		wait' driver "$n" "$d" "$LOCK" "${QARGS[@]}"
	bg_wait driver $((n * 2 + 30)) || fail "the contenders did not finish in time"
	# First the property itself, then that every contender got its turn.
	assert_no_overlap "$d/intervals"
	assert_all_ran "$n" "$d"
}

@test "with three servers up the lock is taken and released on all three" {
	assert_held_everywhere 3
}

@test "with five servers up the lock is taken and released on all five" {
	assert_held_everywhere 5
}

@test "with two of five servers stopped the lock is taken, renewed and released by the other three" {
	use_servers 5
	stop_server q4
	stop_server q5
	local t0 tok
	t0=$(now_ms)
	# Runs for 2.5 TTLs: renewals need the three that answer.
	run -0 within 20000 redlock "${QARGS[@]}" -t 1s "$LOCK" sh -c '
		sleep 2.5
		for s; do redis-cli -s "$s" GET "$REDLOCK_KEY"; done
		echo "token $REDLOCK_TOKEN"' sh "$(redis_sock q1)" "$(redis_sock q2)" "$(redis_sock q3)"
	assert elapsed_below 5000 "$t0"
	tok=${lines[3]#token }
	assert_regex "$tok" "$UUID_RE"
	assert_equal "${lines[*]:0:3}" "$tok $tok $tok"
	assert keys_on '' q1 q2 q3
}

@test "with three of five servers stopped redlock exits 69 within seconds and leaves no key on the two that answer" {
	use_servers 5
	stop_server q3
	stop_server q4
	stop_server q5
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr within 20000 redlock "${QARGS[@]}" -t 3s "$LOCK" touch "$BATS_TEST_TMPDIR/ran"
	assert elapsed_below 3000 "$t0"
	assert_diagnostics
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert keys_on '' q1 q2
	# Waiting forever, with the default TTL, changes nothing.
	t0=$(now_ms)
	run -69 within 20000 redlock "${QARGS[@]}" "$LOCK" touch "$BATS_TEST_TMPDIR/ran"
	assert elapsed_below 3000 "$t0"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert keys_on '' q1 q2
}

@test "with one of three servers stopped a run with -t 30s takes the per-server timeout, not the TTL" {
	use_servers 3
	stop_server q1
	local t0
	t0=$(now_ms)
	run -0 within 20000 redlock "${QARGS[@]}" -t 30s "$LOCK" sh -c 'echo "$REDLOCK_FENCE"'
	assert elapsed_below 3000 "$t0"
	assert_regex "$output" '^[0-9]+$'
	assert keys_on '' q2 q3
}

@test "with one of five servers stopped a run with -t 30s takes the per-server timeout, not the TTL" {
	use_servers 5
	stop_server q3
	local t0
	t0=$(now_ms)
	run -0 within 20000 redlock "${QARGS[@]}" -t 30s "$LOCK" true
	assert elapsed_below 3000 "$t0"
	assert keys_on '' q1 q2 q4 q5
}

@test "losing the majority while the command runs stops it before the deadline and exits 75" {
	use_servers 3
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	local p s ref
	stop_server q2
	stop_server q3
	p=$(now_ms)
	# Stopped before the first renewal (ttl/3): the lease is the
	# acquire's, sent before the command recorded its start.
	s=$(start_ms h)
	ref=$s
	((p - s < 800)) || ref=$p
	assert_gone_by h $((ref + 3000)) "the lease deadline"
	assert pid_dead "$(cat "$BATS_TEST_TMPDIR/h.gchild")"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
}

@test "losing one of three servers while the command runs keeps the lock" {
	use_servers 3
	start_guarded h "${QARGS[@]}" -t 1s "$LOCK"
	local tok
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	stop_server q3
	assert stays_false -t 2.5 eval '! keys_on "$tok" q1 q2'
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert keys_on '' q1 q2
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

@test "with one of five servers stopped, -n on a held lock exits 1 and a waiter waits for the release" {
	use_servers 5
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	stop_server q5
	run --separate-stderr within 10000 redlock "${QARGS[@]}" -n "$LOCK" true
	[[ $status == 1 ]] || fail "-n: status $status, stderr: $stderr"
	guarded_bg c "${QARGS[@]}" -t 3s -w 15 "$LOCK"
	# Still waiting a while later.
	assert stays_false -t 1 held_or_done c
	release_guarded h
	assert_equal "$BG_STATUS" 0
	assert_gets_lock c 10
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "20 contenders on the same five servers never overlap" {
	use_servers 5
	local n=20
	[[ -z ${REDLOCK_WRAPPER:-} ]] || n=5
	run_contenders "$n"
	assert keys_on '' "${SERVERS[@]}"
}

@test "10 contenders on five servers, one of them stopped, never overlap" {
	use_servers 5
	stop_server q2
	local n=10
	[[ -z ${REDLOCK_WRAPPER:-} ]] || n=4
	run_contenders "$n"
	assert keys_on '' q1 q3 q4 q5
}

@test "REDLOCK_FENCE strictly increases across grants, also when the granting majority changes" {
	use_servers 3
	local -a fences=()
	local down i f
	# Each round is granted by a different majority.
	for down in none q1 q3 q2 none; do
		[[ $down == none ]] || stop_server "$down"
		for i in 1 2; do
			f=$(within 10000 "$RL" "${QARGS[@]}" -t 1s -w 5 "$LOCK" sh -c 'echo "$REDLOCK_FENCE"') ||
				fail "round $down/$i: redlock failed"
			[[ $f =~ ^[0-9]+$ ]] || fail "round $down/$i: fence '$f'"
			fences+=("$f")
		done
		[[ $down == none ]] || cont_server "$down"
	done
	for ((i = 1; i < ${#fences[@]}; i++)); do
		((fences[i] > fences[i - 1])) ||
			fail "grant $i: fence ${fences[i]} after ${fences[i - 1]} (all: ${fences[*]})"
	done
}

@test "status and break work over several servers" {
	use_servers 3
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	local fence
	fence=$(cat "$BATS_TEST_TMPDIR/h.fence")
	run -0 within 10000 redlock status "${QARGS[@]}" "$LOCK"
	assert_line 'state:   held'
	assert_line "fence:   $fence"
	assert_equal "$(grep -c '^server:' <<<"$output")" 3
	run -0 within 10000 redlock status --json "${QARGS[@]}" "$LOCK"
	assert_output --partial '"held":true'
	assert_output --partial "\"fence\":$fence"
	# One server that does not answer: the other two still agree.
	stop_server q3
	run -0 within 10000 redlock status "${QARGS[@]}" "$LOCK"
	assert_line 'state:   held'
	cont_server q3
	run -0 within 10000 redlock break "${QARGS[@]}" "$LOCK"
	assert_output --partial "removed lock '$LOCK'"
	assert keys_on '' q1 q2 q3
	# The holder finds the lock gone at its next renewal.
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	run -1 within 10000 redlock status "${QARGS[@]}" "$LOCK"
	assert_line 'state:   free'
	run -1 within 10000 redlock break "${QARGS[@]}" "$LOCK"
}
