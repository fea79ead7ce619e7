#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --lock-delay DURATION (SCHEDULING in redlock-scheduling(7)): after a lock was lost (its
# key expired without a release), no holder is granted NAME until
# DURATION after the expiry on the server's clock, as consul's sessions
# do; a clean release gives no delay.  Times are taken on the server's
# clock (TIME): the expiry as TIME + PTTL once the holder can no longer
# renew, the waiter's grant by its command asking TIME.  Overlaps are
# caught by the flock(1) oracle of fault_helpers.bash.

load helpers
load fault_helpers
load sentinel_helpers
lifecycle main

# ms_of "SECONDS MICROSECONDS": the TIME reply as ms.
ms_of() {
	local sec usec
	read -r sec usec <<<"$1"
	echo $((sec * 1000 + 10#$usec / 1000))
}

# server_ms [NAME]: the server's clock in ms.
server_ms() { ms_of "$(rcli_at "${1:-$REDIS_NAME}" TIME | tr '\n' ' ')"; }

# expiry_ms KEY [NAME]: when KEY expires, on the server's clock.
expiry_ms() {
	local t p
	t=$(server_ms "${2:-$REDIS_NAME}")
	p=$(rcli_at "${2:-$REDIS_NAME}" PTTL "$1")
	echo $((t + p))
}

# waiter TAG SOCKET [REDLOCK-OPTION...] NAME: a waiter whose command,
# under the oracle, writes the server's TIME (through SOCKET) to
# TAG.time.
waiter() {
	local tag=$1 sock=$2 d=$BATS_TEST_TMPDIR
	shift 2
	bg_start "$tag" "$RL" "$@" flock -n -E 99 "$ORACLE" /bin/sh -c \
		'redis-cli -s "$1" TIME | tr "\n" " " >"$2.tmp" && mv "$2.tmp" "$2"' \
		sh "$sock" "$d/$tag.time"
}

granted_ms() { ms_of "$(cat "$BATS_TEST_TMPDIR/$1.time")"; }

@test "a holder stopped past its TTL: the waiter gets NAME only once the delay after the expiry has passed on the server's clock" {
	start_guarded h -t 1s --lock-delay 2s job
	stop_pid "$(bg_pid h)"
	local exp
	exp=$(expiry_ms redlock:job)
	waiter w "$REDIS_SOCK" -w 20 -v job
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 15
	bg_wait w 5
	assert_equal "$BG_STATUS" 0
	local got
	got=$(granted_ms w)
	((got >= exp + 2000)) || fail "granted at $got, $((exp + 2000 - got)) ms before expiry + delay ($exp + 2000)"
	((got <= exp + 2000 + 1000)) || fail "granted $((got - exp - 2000)) ms after expiry + delay: it did not wake at the end of the delay"
	assert_regex "$(bg_err w)" 'held back for'
	# Its command was killed by the guard before the lease ended (it
	# would live on until the holder is continued, seconds later).  The
	# watcher that notes the tree's end is one more process that a
	# loaded machine may schedule a little late (131 ms was seen with
	# the suite's files beside this one), hence half a second of room.
	assert_gone_by h $((exp + 500)) "the expiry"
	cont_pid "$(bg_pid h)"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
}

@test "status shows a free lock as free, lock-delay until T, and a waiter wakes only at its end" {
	start_guarded h -t 1s --lock-delay 3s job
	stop_pid "$(bg_pid h)"
	wait_until -t 5 key_absent redlock:job
	run -1 --separate-stderr redlock status job
	assert_line --regexp '^state:   free, lock-delay until [0-9T:-]+Z \([0-9.]+s left\)$'
	run -1 --separate-stderr redlock status --json job
	assert_regex "$output" '"held":false.*"lock_delay_ms":[0-9]+,"lock_delay_until":"[0-9T:-]+Z"'
	# A waiter sleeps through the delay: it makes no attempt meanwhile.
	waiter w "$REDIS_SOCK" -w 20 job
	wait_until -t 5 waiter_blocked
	local before
	before=$(redis_info_field stats total_commands_processed)
	stays_false -t 1 test -e "$BATS_TEST_TMPDIR/w.time"
	local after
	after=$(redis_info_field stats total_commands_processed)
	((after - before < 40)) || fail "$((after - before)) commands in a second of waiting: the waiter spins"
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 10
	run -1 redlock status job
	assert_line 'state:   free'
}
waiter_blocked() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

@test "a clean release hands over at once, with no delay" {
	start_guarded h -t 2s --lock-delay 5s job
	waiter w "$REDIS_SOCK" -w 20 job
	wait_until -t 5 waiter_blocked
	local rel
	rel=$(server_ms)
	release_guarded h
	assert_equal "$BG_STATUS" 0
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 5
	(($(granted_ms w) - rel < 1000)) || fail "handed over $(($(granted_ms w) - rel)) ms after the release"
}

@test "a holder that lost its server and stopped its command leaves NAME held back, even when it reached the server again" {
	local d=$BATS_TEST_TMPDIR rp exp
	rp=$(redis_pid "$REDIS_NAME")
	bg_start h "$RL" -t 6s --kill-after 2s --lock-delay 4s job /bin/sh -c \
		'echo $$ >"$1"; exec sleep 30' sh "$d/cmd.pid"
	wait_for_file "$d/cmd.pid"
	# The server stalls until redlock gives the lease up and stops its
	# command with SIGTERM, --kill-after (2 s) before the key expires.
	exp=$(expiry_ms redlock:job)
	stop_pid "$rp"
	wait_until -t 10 pid_dead "$(cat "$d/cmd.pid")"
	cont_pid "$rp"
	(($(server_ms) < exp)) ||
		skip "the server was resumed after the key expired (a slow machine)"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	local gone
	gone=$(server_ms)
	waiter w "$REDIS_SOCK" -w 20 job
	wait_for_file "$d/w.time" 15
	bg_wait w 5
	assert_equal "$BG_STATUS" 0
	(($(granted_ms w) >= gone + 3000)) ||
		fail "granted $(($(granted_ms w) - gone)) ms after the lost holder ended: no delay"
}

@test "break removes a lock-delay; REDLOCK_LOCK_DELAY sets it; -s is refused" {
	REDLOCK_LOCK_DELAY=30s start_guarded h -t 1s job
	stop_pid "$(bg_pid h)"
	wait_until -t 5 key_absent redlock:job
	run -1 redlock status job
	assert_line --partial 'lock-delay until'
	run -0 --separate-stderr redlock break job
	run -1 redlock status job
	assert_line 'state:   free'
	run -0 redlock -n job true
	run --separate-stderr redlock -s --lock-delay 1s job true
	assert_usage_error
	REDLOCK_LOCK_DELAY=x run --separate-stderr redlock job true
	assert_usage_error
}

@test "break of a lock-delay wakes the waiters it held back, exclusive and shared, instead of leaving them asleep until its end" {
	local mode brk
	for mode in -x -s; do
		rcli FLUSHALL >/dev/null
		start_guarded h -t 1s --lock-delay 30s job
		stop_pid "$(bg_pid h)"
		wait_until -t 5 key_absent redlock:job
		waiter "w$mode" "$REDIS_SOCK" "$mode" -w 40 job
		wait_until -t 5 waiter_blocked
		brk=$(server_ms)
		run -0 --separate-stderr redlock break job
		assert_regex "$stderr" 'removed what held free lock'
		wait_for_file "$BATS_TEST_TMPDIR/w$mode.time" 10
		(($(granted_ms "w$mode") - brk < 5000)) ||
			fail "$mode: granted $(($(granted_ms "w$mode") - brk)) ms after the break"
		bg_wait "w$mode" 5
		assert_equal "$BG_STATUS" 0
		cont_pid "$(bg_pid h)"
		bg_wait h 10
	done
}

@test "a waiter held back by a --replace claim through a lock-delay runs as soon as the replacement releases" {
	# The replacement claims NAME while the lost holder's key still
	# stands: the claim lasts past the delay, and the plain waiter is
	# held back by it until the replacement's release wakes it.
	start_guarded h -t 2s --lock-delay 2s job
	stop_pid "$(bg_pid h)"
	waiter w "$REDIS_SOCK" -w 30 job
	wait_until -t 5 waiter_blocked
	waiter r "$REDIS_SOCK" --replace -w 30 job
	wait_for_file "$BATS_TEST_TMPDIR/r.time" 15
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 15
	bg_wait r 5
	bg_wait w 5
	assert_equal "$BG_STATUS" 0
	(($(granted_ms w) - $(granted_ms r) < 1500)) ||
		fail "the waiter ran $(($(granted_ms w) - $(granted_ms r))) ms after the replacement"
	cont_pid "$(bg_pid h)"
	bg_wait h 10
}

@test "acquire --lock-delay: an acquired lock left to expire holds NAME back too" {
	run -0 redlock acquire -t 500ms --lock-delay 1500ms manual
	local exp
	exp=$(expiry_ms redlock:manual)
	waiter w "$REDIS_SOCK" -w 10 manual
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 10
	(($(granted_ms w) >= exp + 1500)) || fail "granted $((exp + 1500 - $(granted_ms w))) ms early"
}

@test "extend --lock-delay keeps an acquired lock's delay, as redlock-scheduling(7) says to give it" {
	local tok exp
	tok=$(redlock acquire -t 500ms --lock-delay 1500ms manual2)
	run -0 redlock extend -t 600ms --lock-delay 1500ms manual2 "$tok"
	exp=$(expiry_ms redlock:manual2)
	waiter w "$REDIS_SOCK" -w 10 manual2
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 10
	(($(granted_ms w) >= exp + 1500)) || fail "granted $((exp + 1500 - $(granted_ms w))) ms early"
}

@test "through a Sentinel failover with the guard: the waiter gets NAME only after expiry + delay, without overlap" {
	sentinel_setup ld svc-ld
	local url=$SENTINEL_URL exp got
	start_guarded h -u "$url" -t 2s --lock-delay 3s job
	wait_until caught_up ld
	stop_pid "$(bg_pid h)"
	exp=$(expiry_ms redlock:job ld-m)
	wait_until caught_up ld
	fail_over ld svc-ld
	waiter w "$(redis_sock ld-r)" -u "$url" -t 2s -w 40 -v job
	wait_for_file "$BATS_TEST_TMPDIR/w.time" 40
	bg_wait w 5
	assert_equal "$BG_STATUS" 0
	got=$(granted_ms w)
	((got >= exp + 3000)) || fail "granted at $got, $((exp + 3000 - got)) ms before expiry + delay"
	cont_pid "$(bg_pid h)"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	sentinel_teardown ld
}

@test "a lock held back by a lock-delay is called so by -n, -w, acquire -n, --skip-alert and sd_notify's STATUS, as status calls it" {
	local d=$BATS_TEST_TMPDIR t='[0-9T:-]+Z \([0-9.]+s left\)'
	# (A 10 s delay: the five refusals below take about 2 s.)
	start_guarded h -t 1s --lock-delay 10s job
	stop_pid "$(bg_pid h)"
	wait_until -t 5 key_absent redlock:job
	run -1 --separate-stderr redlock -n job true
	assert_regex "$stderr" "^redlock: lock 'job' is free, lock-delay until $t$"
	run -1 --separate-stderr redlock acquire -n job
	assert_regex "$stderr" "^redlock: lock 'job' is free, lock-delay until $t$"
	run -1 --separate-stderr redlock -w 0.3 job true
	assert_regex "$stderr" "^redlock: timed out waiting for lock 'job' \(free, lock-delay until $t\)$"
	run -1 --separate-stderr redlock -n -q --record --skip-alert 1 job true
	assert_regex "$stderr" "^redlock: lock 'job' was busy 1 times in a row \(free, lock-delay until $t\)$"
	bg_start listener "$TESTS_DIR/notify_listener.py" "$d/notify.sock" "$d/notes"
	wait_for_file "$d/notes.ready"
	run -1 env NOTIFY_SOCKET="$d/notify.sock" "$RL" -q -w 0.5 job true
	wait_until -t 5 grep -q "STATUS=waiting for lock 'job'" "$d/notes"
	run grep -E "STATUS=waiting for lock 'job': free, lock-delay until $t$" "$d/notes"
	assert_success
	cont_pid "$(bg_pid h)"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
}
