#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Several servers: the Redlock quorum (QUORUM in redlock-protocol(7)).  The lock is taken,
# renewed and released on every server that answers and needs a majority;
# servers that are missing (a socket nobody listens on) or stopped
# (SIGSTOP: they accept connections but never answer) before and while
# the lock is held; status 69 when no majority answers (redlock(1), EXIT STATUS); the key
# deleted under a holder; the fencing token across grants by different
# majorities (redlock(1), "Running a command under the lock"); status and break over several servers (the verbs in redlock(1)).
# Overlaps are caught by the flock(1) oracle of fault_helpers.bash.  What
# a lock held by someone else looks like is in quorum-busy.bats.
#
# Five private servers q1..q5; the three-server tests use q1..q3.  A
# server resumed after a test may still run requests that were queued
# while it was stopped, so every test that stops one uses a lock name of
# its own ($LOCK).

load helpers
load fault_helpers

lifecycle q1 -- q2 -- q3 -- q4 -- q5
# shellcheck disable=SC2317 # called by lifecycle
test_setup() {
	LOCK=job$BATS_TEST_NUMBER
	KEY=redlock:$LOCK
	Q1=$(redis_sock q1) Q2=$(redis_sock q2) Q3=$(redis_sock q3)
	export Q1 Q2 Q3
	QUORUM=(-u "unix://$Q1" -u "unix://$Q2" -u "unix://$Q3")
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

# The command that reports the key's value on each of q1..q3: T for its
# own token.
SHOW_ALL='for s in "$Q1" "$Q2" "$Q3"; do
	v=$(redis-cli -s "$s" GET "$REDLOCK_KEY"); [ "$v" = "$REDLOCK_TOKEN" ] && printf "T " || printf "%s " "${v:--}"
done'

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

# --- taking and releasing ---------------------------------------------------------

@test "with three servers up the lock is taken on all three with one token and released on all three" {
	run -0 redlock "${QUORUM[@]}" name sh -c "$SHOW_ALL"
	assert_output 'T T T '
	assert_equal "$(on_all redlock:name)" '- - -'
	assert_held_everywhere 3
}

@test "with five servers up the lock is taken and released on all five" {
	assert_held_everywhere 5
}

@test "several URLs in REDLOCK_URL make a quorum like repeated -u" {
	REDLOCK_URL="unix://$Q1,unix://$Q2,unix://$Q3" run -0 redlock name sh -c "$SHOW_ALL"
	assert_output 'T T T '
}

@test "REDLOCK_LIMIT in the environment leaves a quorum's verbs that take nothing alone, and -x runs" {
	local tok
	tok=$(redlock acquire "${QUORUM[@]}" name)
	REDLOCK_LIMIT=2 run -0 redlock status "${QUORUM[@]}" name
	REDLOCK_LIMIT=2 run -0 redlock list "${QUORUM[@]}"
	REDLOCK_LIMIT=2 run -0 redlock release "${QUORUM[@]}" name "$tok"
	REDLOCK_LIMIT=2 run -0 redlock -x "${QUORUM[@]}" name true
	# What takes a shared lock is refused, naming the variables too.
	REDLOCK_LIMIT=2 run -64 --separate-stderr redlock "${QUORUM[@]}" name true
	assert_regex "$stderr" 'REDLOCK_LIMIT\) need one server'
}

# --- servers missing or stopped -------------------------------------------------------

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

@test "a hung minority server does not prevent the lock" {
	stop_server q4
	local t0 t1
	t0=$(now_ms)
	run redlock -u "unix://$Q1" -u "unix://$Q2" -u "unix://$(redis_sock q4)" "$LOCK" true
	t1=$(now_ms)
	cont_server q4
	assert_equal "$status" 0
	assert [ $((t1 - t0)) -lt "$(scale_ms 15000)" ]
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
}

@test "with three of five servers stopped, waiting forever with the default TTL still exits 69 within seconds" {
	use_servers 5
	stop_server q3
	stop_server q4
	stop_server q5
	local t0
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

# --- renewing and losing --------------------------------------------------------------

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

# --- no overlap, the fencing token -------------------------------------------------------

@test "20 contenders on the same five servers never overlap" {
	use_servers 5
	local n=20
	[[ -z ${REDLOCK_WRAPPER:-} ]] || n=5
	run_contenders "$n" "$LOCK" "${QARGS[@]}"
	assert keys_on '' "${SERVERS[@]}"
}

@test "10 contenders on five servers, one of them stopped, never overlap" {
	use_servers 5
	stop_server q2
	local n=10
	[[ -z ${REDLOCK_WRAPPER:-} ]] || n=4
	run_contenders "$n" "$LOCK" "${QARGS[@]}"
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

# --- status and break ---------------------------------------------------------------------

@test "status over several servers says held, with the holder's fence and every server, as text and as JSON" {
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
	release_guarded h
	assert_equal "$BG_STATUS" 0
}

@test "list --json over several servers says of every lock what status --json does, servers included; a server's name with control bytes is escaped in text" {
	use_servers 3
	# q1 reached through a path with an ESC and a quote in it.
	local odd=$BATS_TEST_TMPDIR/$'s\e"q'.sock
	local -a args=("${QARGS[@]}")
	ln -s "$(redis_sock q1)" "$odd"
	args[1]="unix://$odd"
	start_guarded h "${args[@]}" -t 3s "$LOCK"
	run -0 within 10000 redlock status --json "${args[@]}" "$LOCK"
	local servers=${output#*,\"servers\":}
	assert_regex "$servers" '^\[\{"server":"[^"]*s\\u001b\\"q\.sock","answered":true,"held":true,"ttl_ms":[0-9]+\},.*\]\}$'
	run -0 within 10000 redlock list --json "${args[@]}"
	assert_equal "${#lines[@]}" 1
	# The same servers, but for the TTLs (digits) read a moment apart.
	assert_equal "$(tr -d 0-9 <<<"${output#*,\"servers\":}")" "$(tr -d 0-9 <<<"$servers")"
	run -0 within 10000 redlock status "${args[@]}" "$LOCK"
	assert_line --regexp '^server:  .*s\\x1b"q\.sock [0-9.]+m?s$'
	refute_output --partial $'\e'
	release_guarded h
	assert_equal "$BG_STATUS" 0
}

@test "release and extend of a token that holds nothing, with one server of three stopped: the conflict status, as the other two say" {
	use_servers 3
	stop_server q3
	local t=00000000-0000-4000-8000-000000000000
	run -1 --separate-stderr within 10000 redlock "${QARGS[@]}" release free1 "$t"
	assert_equal "$stderr" "redlock: cannot release lock 'free1': it is not held"
	run -1 within 10000 redlock "${QARGS[@]}" extend free1 "$t"
	run -7 within 10000 redlock -E 7 "${QARGS[@]}" release free1 "$t"
	cont_server q3
}

@test "-n on three servers, two holding the lock for another and one stopped: the conflict status at once, without waiting for the stopped one" {
	use_servers 3
	rcli_at q1 SET "$KEY" foreign PX 60000 >/dev/null
	rcli_at q2 SET "$KEY" foreign PX 60000 >/dev/null
	stop_server q3
	local t0
	t0=$(now_ms)
	# The release after the attempt is handed to the stopped server, not
	# waited for (its second until the operation's timeout).
	run -1 within 10000 redlock -q "${QARGS[@]}" -n "$LOCK" true
	assert elapsed_below 1000 "$t0"
	cont_server q3
}

# The run id round (same-server.bats) waits for a stopped server only a
# little past the majority's answers, not its whole timeout, and -w
# counts from redlock's start, that round included: the build before
# gave up 250 ms and more after -w ran out.  The median of five runs.
@test "-w 300ms on three servers, two holding the lock for another and one stopped: gives up at 300 ms, not a timeout of the stopped one later" {
	use_servers 3
	rcli_at q1 SET "$KEY" foreign PX 60000 >/dev/null
	rcli_at q2 SET "$KEY" foreign PX 60000 >/dev/null
	stop_server q3
	local i t0 all=() med
	for ((i = 0; i < 5; i++)); do
		t0=$(now_ms)
		run within 10000 redlock -q "${QARGS[@]}" -w 300ms "$LOCK" true
		((status == 1)) || fail "status $status: $output"
		all+=("$(($(now_ms) - t0))")
	done
	cont_server q3
	med=$(printf '%s\n' "${all[@]}" | sort -n | sed -n 3p)
	((med >= 300)) || fail "gave up early: ${all[*]} ms"
	((med < 300 + $(scale_ms 180))) || fail "late: ${all[*]} ms"
}

@test "a short TTL on three servers, one of them stopped: the command runs at once, and redlock ends when it does" {
	use_servers 3
	stop_server q3
	# The grant's bump of the fencing counters needs a majority, not
	# the stopped server's reply, which would outlast a 100 ms lease.
	run -0 within 10000 redlock "${QARGS[@]}" -t 100ms fresh1 echo ran
	assert_output ran
	# Renewal rounds that wait out the stopped server take longer than
	# the renewal interval; the thread still hears that the command ended.
	run -0 within 10000 redlock "${QARGS[@]}" -t 300ms fresh2 sleep 1
	cont_server q3
}

@test "status over three servers, one of them stopped, still says held: the other two agree" {
	use_servers 3
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
	stop_server q3
	run -0 within 10000 redlock status "${QARGS[@]}" "$LOCK"
	assert_line 'state:   held'
	# The server that did not answer says why, as text and as JSON.
	assert_line --regexp "^server:  .*q3.* no answer: no reply in time"
	run -0 within 10000 redlock status --json "${QARGS[@]}" "$LOCK"
	assert_output --regexp '"answered":false,"held":false,"ttl_ms":0,"error":"no reply in time[^"]*"'
	cont_server q3
	release_guarded h
	assert_equal "$BG_STATUS" 0
}

@test "status over three servers, one of them refusing a password: that server says why" {
	local pw=$BATS_TEST_TMPDIR/pw
	use_servers 3
	rcli_at q3 CONFIG SET requirepass Q3-pw >/dev/null
	run -1 redlock status "${QARGS[@]}" "$LOCK"
	assert_line --regexp "^server:  .*q3.* no answer: authentication required"
	echo Q3-pw >"$pw"
	run -1 redlock --password-file "$pw" status "${QARGS[@]}" "$LOCK"
	refute_output --partial 'no answer'
	rcli_at q3 -a Q3-pw --no-auth-warning CONFIG SET requirepass '' >/dev/null
	assert_equal "$(rcli_at q3 PING)" PONG
}

@test "break over several servers removes the lock on all of them, the holder exits 75, then status says free and break exits 1" {
	use_servers 3
	start_guarded h "${QARGS[@]}" -t 3s "$LOCK"
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

@test "break that reaches a minority of the servers removes what they held, says the lock may still be held, and exits 69" {
	use_servers 3
	local tok
	tok=$(redlock acquire "${QARGS[@]}" -t 1m "$LOCK")
	stop_server q2
	stop_server q3
	run -69 --separate-stderr within 10000 redlock break "${QARGS[@]}" "$LOCK"
	cont_server q2
	cont_server q3
	assert_regex "$stderr" "removed lock '$LOCK'"
	assert_regex "$stderr" "lock '$LOCK' may still be held: "
	# (The stopped servers may yet run what break sent them.)
	run redlock release "${QARGS[@]}" "$LOCK" "$tok"
}

@test "--once-per: a release that reaches one of three servers says the success was recorded and the period closed, and the next run skips" {
	use_servers 3
	local d=$BATS_TEST_TMPDIR
	bg_start h redlock "${QARGS[@]}" --once-per 1h "$LOCK" /bin/sh -c '
		. "$TESTS_DIR/lib/await.sh"; : >"$1"; await_file "$2"' \
		sh "$d/h.held" "$d/h.go"
	wait_for_file "$d/h.held" 20
	stop_server q2
	stop_server q3
	: >"$d/h.go"
	bg_wait h 20
	cont_server q2
	cont_server q3
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err h)" "could not release lock '$LOCK'.*; the run's success was recorded: this period of --once-per is closed"
	run -1 --separate-stderr redlock "${QARGS[@]}" --once-per 1h "$LOCK" echo again
	refute_output
}
