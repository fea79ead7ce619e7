#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Several servers: the Redlock quorum (SPEC §5).

load helpers

setup_file() {
	common_setup_file
	start_redis q1
	start_redis q2
	start_redis q3
	use_redis q1
	export Q1 Q2 Q3
	Q1=$(redis_sock q1)
	Q2=$(redis_sock q2)
	Q3=$(redis_sock q3)
}
teardown_file() { common_teardown_file; }
setup() {
	common_setup q2 q3
	QUORUM=(-u "unix://$Q1" -u "unix://$Q2" -u "unix://$Q3")
}
teardown() { common_teardown; }

# on_all KEY: the value of KEY on q1 q2 q3, "-" for none.
on_all() {
	local n v out=''
	for n in q1 q2 q3; do
		v=$(rcli_at "$n" GET "$1")
		out+="${v:--} "
	done
	echo "${out% }"
}

# The command that reports the key's value on each server.
SHOW_ALL='for s in "$Q1" "$Q2" "$Q3"; do
	v=$(redis-cli -s "$s" GET "$REDLOCK_KEY"); [ "$v" = "$REDLOCK_TOKEN" ] && printf "T " || printf "%s " "${v:--}"
done'

@test "with three servers the lock is taken on all of them with one token" {
	run -0 redlock "${QUORUM[@]}" name sh -c "$SHOW_ALL"
	assert_output 'T T T '
	assert_equal "$(on_all redlock:name)" '- - -'
}

@test "several URLs in REDLOCK_URL make a quorum like repeated -u" {
	REDLOCK_URL="unix://$Q1,unix://$Q2,unix://$Q3" run -0 redlock name sh -c "$SHOW_ALL"
	assert_output 'T T T '
}

@test "with one of three servers down the lock is taken on the other two" {
	run -0 redlock -u "unix://$Q1" -u "unix://$Q2" -u "unix://$BATS_TEST_TMPDIR/down.sock" \
		name sh -c 'for s in "$Q1" "$Q2"; do redis-cli -s "$s" GET "$REDLOCK_KEY"; done'
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" "$UUID_RE"
	assert_equal "${lines[1]}" "${lines[0]}"
}

@test "with two of three servers down redlock exits 69 without running the command" {
	run -69 --separate-stderr redlock -u "unix://$Q1" -u "unix://$BATS_TEST_TMPDIR/down1.sock" \
		-u "unix://$BATS_TEST_TMPDIR/down2.sock" name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_diagnostics
	# Nothing left behind on the server that answered.
	assert_equal "$(rcli_at q1 EXISTS redlock:name)" 0
}

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
	run -0 redlock "${QUORUM[@]}" -n name sh -c "$SHOW_ALL"
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

@test "renewal keeps the lock on every server past the TTL" {
	run -0 redlock "${QUORUM[@]}" -t 1s name sh -c '
		i=0
		while [ $i -lt 10 ]; do
			for s in "$Q1" "$Q2" "$Q3"; do
				v=$(redis-cli -s "$s" GET "$REDLOCK_KEY")
				[ "$v" = "$REDLOCK_TOKEN" ] || { echo "round $i $s: $v"; exit 9; }
			done
			sleep 0.3; i=$((i + 1))
		done'
}

@test "losing the lock on a majority stops the command and exits 75" {
	hold_lock h "${QUORUM[@]}" -t 1s name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	rcli_at q1 DEL redlock:name >/dev/null
	rcli_at q2 DEL redlock:name >/dev/null
	bg_wait h 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
}

@test "losing the lock on a minority is survived" {
	hold_lock h "${QUORUM[@]}" -t 1s name
	rcli_at q1 DEL redlock:name >/dev/null
	# Several renewal periods.
	assert stays_false -t 2 pid_dead "$(bg_pid h)"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(on_all redlock:name)" '- - -'
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

@test "a hung minority server does not prevent the lock" {
	start_redis q4
	local rpid
	rpid=$(redis_pid q4)
	kill -STOP "$rpid"
	local t0 t1
	t0=$(now_ms)
	run redlock -u "unix://$Q1" -u "unix://$Q2" -u "unix://$(redis_sock q4)" name true
	t1=$(now_ms)
	kill -CONT "$rpid"
	stop_redis q4
	assert_equal "$status" 0
	assert [ $((t1 - t0)) -lt "$(scale_ms 15000)" ]
}

@test "REDLOCK_FENCE is set in quorum mode" {
	run -0 redlock "${QUORUM[@]}" name printenv REDLOCK_FENCE
	assert_regex "$output" '^[0-9]+$'
}
