#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Shared locks and semaphores (redlock(1), "Shared locks and semaphores"): -s, -x/-e, --limit N.  The
# concurrency tests use an oracle kept on the same server under keys of
# their own: each command counts itself in and out with atomic scripts,
# and the largest count seen is compared with N.

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	export PY_PRELUDE='
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["REDIS_SOCK"])
'
}

py() {
	local code=$1
	shift
	/usr/bin/python3 -c "$PY_PRELUDE$code" "$@"
}

# aux KEY SUFFIX: redlock's auxiliary key (with its NUL byte) as Python.
aux() { printf 'b"{%s}\\x00%s"' "$1" "$2"; }

# writer_queued NAME: an exclusive request waits in NAME's writer queue.
writer_queued() {
	[[ $(py "print(r.zcard($(aux "redlock:$1" xwait)))") -ge 1 ]]
}

# holders NAME: how many shared holders the server records.
holders() { py "print(r.zcard($(aux "redlock:$1" holders)))"; }

# run_workers K REDLOCK-OPTION...: K workers at once, each running
# lib/count-inside.sh (with N=$ORACLE_N) under the lock `sem` three
# times; waits for them all.
run_workers() {
	local k=$1 i
	shift
	for ((i = 0; i < k; i++)); do
		bg_start "w$i" /bin/sh -c '
			rl=$1 cs=$2 n=$3 sock=$4; shift 4
			for j in 1 2 3; do "$rl" "$@" sem "$cs" "$n" "$sock" || exit; done' \
			worker "$RL" "$TESTS_DIR/lib/count-inside.sh" "$ORACLE_N" "$REDIS_SOCK" "$@"
	done
	for ((i = 0; i < k; i++)); do
		bg_wait "w$i" 60
		assert_equal "$BG_STATUS" 0
	done
}

@test "--limit 3 with 8 workers never lets more than 3 in, and lets exactly 3 in at once" {
	ORACLE_N=3 run_workers 8 --limit 3 -t 5s
	assert_equal "$(rcli GET o:max)" 3
	assert_equal "$(rcli GET o:cur)" 0
	assert key_absent redlock:sem
}

@test "--limit 1 is a mutex: exactly one holder at a time" {
	ORACLE_N=1 run_workers 4 --limit 1 -t 5s
	assert_equal "$(rcli GET o:max)" 1
}

@test "-s lets every reader in at once" {
	ORACLE_N=5 run_workers 5 -s -t 5s
	assert_equal "$(rcli GET o:max)" 5
}

@test "a writer and -s readers exclude each other" {
	hold_lock r1 -s name
	hold_lock r2 --shared name
	assert_equal "$(holders name)" 2
	run -1 redlock -n name true
	run -1 redlock -x -n name true
	run -1 redlock -e -n name true
	run -1 redlock --exclusive -n name true
	release_lock r1
	release_lock r2
	hold_lock w name
	run -1 redlock -s -n name true
	run -1 redlock --limit 5 -n name true
	release_lock w
	run -0 redlock -s -n name true
}

@test "the last of -s and -x wins" {
	hold_lock r -s name
	run -0 redlock -x -s -n name true
	run -1 redlock -s -x -n name true
	run -1 redlock --limit 4 -e -n name true
	release_lock r
}

@test "each request is granted when fewer than its own N hold the lock" {
	hold_lock a --limit 3 name
	hold_lock b --limit 3 name
	run -1 redlock --limit 2 -n name true
	run -0 redlock --limit 3 -n name true
	run -0 redlock -s -n name true
	release_lock a
	run -0 redlock --limit 2 -n name true
	release_lock b
}

@test "every holder gets its own token and a larger fence from the same counter" {
	hold_lock a -s name
	run -0 redlock -s name sh -c 'echo "$REDLOCK_TOKEN $REDLOCK_FENCE $REDLOCK_NAME"'
	local tok1 fence1
	read -r tok1 fence1 _ <<<"$output"
	assert_regex "$tok1" "$UUID_RE"
	run -0 redlock -s name sh -c 'echo "$REDLOCK_TOKEN $REDLOCK_FENCE"'
	local tok2 fence2
	read -r tok2 fence2 <<<"$output"
	assert [ "$tok1" != "$tok2" ]
	assert [ "$fence2" -gt "$fence1" ]
	release_lock a
	run -0 redlock name sh -c 'echo "$REDLOCK_FENCE"'
	assert [ "$output" -gt "$fence2" ]
}

@test "a waiting writer makes new readers wait, and gets the lock before them" {
	local d=$BATS_TEST_TMPDIR
	hold_lock r0 -s name
	# The writer fails (status 9) if any later reader ran before it.
	bg_start w "$RL" name sh -c 'for f in "$1"/r*.got; do [ -e "$f" ] && exit 9; done; : >"$1/w.got"' sh "$d"
	wait_until writer_queued name
	for i in 1 2 3; do
		bg_start "r$i" "$RL" -s name touch "$d/r$i.got"
	done
	assert stays_false -t 1 test -e "$d/r1.got"
	release_lock r0
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
	for i in 1 2 3; do
		bg_wait "r$i" 10
		assert_equal "$BG_STATUS" 0
		assert [ -e "$d/r$i.got" ]
	done
}

@test "a writer is not starved by a stream of overlapping readers" {
	local d=$BATS_TEST_TMPDIR
	# 24 readers, one every 100 ms, each holding 300 ms: without writer
	# preference the lock would stay shared until the stream ends.
	bg_start stream /bin/sh -c '
		rl=$1 d=$2
		for i in $(seq 1 24); do
			"$rl" -s name sh -c "sleep 0.3; : >\"$d/done.$i\"" &
			sleep 0.1
		done
		wait' stream "$RL" "$d"
	wait_until holders_at_least 1
	bg_start w "$RL" name sh -c 'ls "$1" | grep -c "^done\." >"$1/w.count"' sh "$d"
	wait_until _queued_or_ran
	local queued_at
	queued_at=$(_done_count)
	bg_wait w 20
	assert_equal "$BG_STATUS" 0
	bg_wait stream 30
	# Once the writer was queued, only the readers that held the lock
	# then (a 300 ms hold, one started every 100 ms: about four) ended
	# before it ran, not the rest of the stream.  (Counted from when it
	# queued, not from the stream's start: a loaded machine may start
	# the writer late.)
	(($(cat "$d/w.count") - queued_at <= 8)) ||
		fail "$(($(cat "$d/w.count") - queued_at)) readers ended between the writer's queueing and its run"
	(($(_done_count) == 24)) || fail "the stream did not end: $(_done_count) of 24"
}
holders_at_least() { (($(holders name) >= $1)); }
_done_count() { find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'done.*' | wc -l; }
_queued_or_ran() { writer_queued name || [[ -e $BATS_TEST_TMPDIR/w.count ]]; }

@test "readers are not starved by writers taking turns: a -s request gets in between two looping writers" {
	local d=$BATS_TEST_TMPDIR
	# Two writers, each taking the lock again as soon as it is free: one
	# of them always waits, and every release goes to the other.
	local w
	for w in 1 2; do
		bg_start "w$w" /bin/sh -c '
			rl=$1 d=$2 i=0
			while [ ! -e "$d/stop" ] && [ $i -lt 2000 ]; do
				"$rl" name sh -c "sleep 0.05"; i=$((i + 1))
			done' loop "$RL" "$d"
	done
	wait_until writer_queued name
	local i t0
	for i in 1 2 3; do
		t0=$(now_ms)
		run -0 redlock -s -w 5s name true
		(($(now_ms) - t0 < 5000)) || fail "reader $i waited $(($(now_ms) - t0)) ms"
	done
	: >"$d/stop"
	bg_wait w1 20
	bg_wait w2 20
}

@test "a waiting writer that gives up leaves the queue at once" {
	hold_lock r -s name
	run -1 redlock -w 0.3 name true
	run -0 redlock -s -n name true
	release_lock r
}

# exists NAME SUFFIX: NAME's auxiliary key SUFFIX exists.
exists() { [[ $(py "print(r.exists($(aux "redlock:$1" "$2")))") == 1 ]]; }

@test "a shared grant and release that nobody waits for push no wake-up and leave no list" {
	local t1 t2
	t1=$(redlock acquire -s -t 1m name)
	t2=$(redlock acquire --limit 3 -t 1m name)
	redlock release name "$t1"
	redlock release name "$t2"
	redlock -s name true
	assert key_absent redlock:name
	refute exists name wake
	refute exists name hmeta
	refute exists name holders
}

@test "a shared waiter that gives up, by -w or by a signal, leaves nothing of its wait behind" {
	hold_lock x name
	run -1 redlock -s -w 0.3 name true
	refute exists name hmeta
	refute exists name waiting
	bg_start w "$RL" -s name true
	wait_until exists name waiting
	kill -TERM "$(bg_pid w)"
	bg_wait w
	assert_equal "$BG_STATUS" 143
	refute exists name hmeta
	refute exists name waiting
	release_lock x
	assert_equal "$BG_STATUS" 0
}

@test "a shared request kept out of a free lock by a waiting exclusive request says so, as status shows it" {
	# An exclusive request's place among the waiting writers, lapsing in
	# a minute (server milliseconds), as acquire.lua writes it.
	py "s, us = r.time(); r.zadd($(aux redlock:name xwait), {'w-1': s * 1000 + us // 1000 + 60000})"
	run -1 redlock status name
	assert_line 'state:   free'
	run -1 --separate-stderr redlock -s -n name true
	assert_equal "$stderr" "redlock: lock 'name' is free, but an exclusive request waits for it, and shared ones wait behind it"
	run -1 --separate-stderr redlock -s -w 0.2 name true
	assert_equal "$stderr" "redlock: timed out waiting for lock 'name' (free, but an exclusive request waits for it, and shared ones wait behind it)"
	run -0 redlock -n name true
	py "r.delete($(aux redlock:name xwait))"
}

@test "a SIGKILLed shared holder stops counting when its lease ends on the server" {
	hold_lock a --limit 2 -t 1s name
	hold_lock b --limit 2 -t 1s name
	kill -KILL "$(bg_pid a)"
	wait_until pid_dead "$(bg_pid a)"
	# b keeps renewing, so the key lives on; a's place comes free when
	# its lease ends.
	local t0 t1
	t0=$(now_ms)
	run -0 redlock --limit 2 -w 5s name true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 2500)" ]
	assert key_exists redlock:name
	release_lock b
	wait_for_no_key redlock:name 5
}

@test "the lock of SIGKILLed shared holders expires with their leases" {
	hold_lock a -s -t 1s name
	kill -KILL "$(bg_pid a)"
	wait_until pid_dead "$(bg_pid a)"
	assert key_exists redlock:name
	run -1 redlock -n name true
	wait_for_no_key redlock:name 5
	run -0 redlock -n name true
}

@test "redis-py cannot take a key held by shared holders" {
	hold_lock a -p '' -s name
	run -0 py 'print(r.lock("name", timeout=5).acquire(blocking=False))'
	assert_output False
	release_lock a
	run -0 py 'print(r.lock("name", timeout=5).acquire(blocking=False))'
	assert_output True
}

@test "redlock -s waits while redis-py holds the key, then gets it" {
	local tok
	tok=$(py '
l = r.lock("name", timeout=60)
assert l.acquire(blocking=False)
print(l.local.token.decode())')
	run -1 redlock -p '' -s -n name true
	bg_start s "$RL" -p '' -s -w 15s name touch "$BATS_TEST_TMPDIR/s.got"
	assert stays_false -t 0.5 test -e "$BATS_TEST_TMPDIR/s.got"
	py '
l = r.lock("name")
l.local.token = sys.argv[1].encode()
l.release()' "$tok"
	bg_wait s 10
	assert_equal "$BG_STATUS" 0
	assert [ -e "$BATS_TEST_TMPDIR/s.got" ]
}

@test "status lists every shared holder, in text and JSON" {
	hold_lock a -s name
	hold_lock b -s name
	hold_lock c --limit 9 name
	run -0 --separate-stderr redlock status name
	assert_line --index 1 'state:   held shared by 3 holders'
	assert_equal "$(grep -c '^holder:  ' <<<"$output")" 3
	for t in a b c; do
		assert_line --regexp "^holder:  .*@.* pid $(bg_pid "$t")\$"
	done
	run -0 --separate-stderr redlock status --json name
	run -0 /usr/bin/python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["held"] is True and o["shared"] is True, o
assert o["count"] == 3 and len(o["holders"]) == 3, o
pids = sorted(h["pid"] for h in o["holders"])
assert pids == sorted(int(p) for p in sys.argv[2:]), (pids, sys.argv[2:])
for h in o["holders"]:
    assert 0 < h["ttl_ms"] <= 30000 and h["fence"] > 0 and h["foreign"] is False, h
' "$output" "$(bg_pid a)" "$(bg_pid b)" "$(bg_pid c)"
	release_lock a
	release_lock b
	release_lock c
	run -1 redlock status name
}

@test "list shows a shared name once with its number of holders" {
	hold_lock a -s name
	hold_lock b -s name
	hold_lock x other
	run -0 --separate-stderr redlock list
	assert_equal "${#lines[@]}" 2
	assert_line --regexp '^name +[0-9.]+m?s  \(shared by 2 holders\)$'
	run -0 --separate-stderr redlock list --json 'nam*'
	assert_equal "${#lines[@]}" 1
	run -0 /usr/bin/python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["name"] == "name" and o["count"] == 2 and len(o["holders"]) == 2, o' "$output"
	release_lock a
	release_lock b
	release_lock x
}

@test "break removes every shared holder, and they find out at their next renewal" {
	hold_lock a -s -t 1s name
	hold_lock b -s -t 1s name
	run -0 --separate-stderr redlock break name
	assert_equal "$stderr" "redlock: removed lock 'name' held shared by 2 holders"
	assert key_absent redlock:name
	assert_equal "$(holders name)" 0
	bg_wait a 10
	assert_equal "$BG_STATUS" 75
	bg_wait b 10
	assert_equal "$BG_STATUS" 75
	run -1 redlock break name
}

@test "acquire -s, extend and release work by token, without -s on the later verbs" {
	run -0 --separate-stderr redlock acquire -s -t 1m name
	local t1=$output
	run -0 --separate-stderr redlock acquire --limit 2 -t 1m name
	local t2=$output
	run -1 redlock acquire --limit 2 -n name
	run -1 redlock -n name true
	run -0 redlock extend -t 2m name "$t1"
	run -1 --separate-stderr redlock release name 00000000-0000-4000-8000-000000000000
	assert_equal "$stderr" "redlock: cannot release lock 'name': it is held shared by 2 holders, none of them this token"
	run -0 redlock release name "$t1"
	assert_equal "$(holders name)" 1
	run -0 redlock release -s name "$t2"
	assert key_absent redlock:name
	run -1 redlock release name "$t2"
	# and -s (or REDLOCK_LIMIT) on them does not miss an exclusive hold
	t1=$(redlock acquire -t 1m name)
	run -0 redlock extend -s name "$t1"
	REDLOCK_LIMIT=2 run -0 redlock release name "$t1"
	assert key_absent redlock:name
}

@test "acquire --env of a shared lock exports the token and the fence" {
	run -0 --separate-stderr redlock acquire --env -s name
	eval "$output"
	assert_regex "$REDLOCK_TOKEN" "$UUID_RE"
	assert [ "$REDLOCK_FENCE" -gt 0 ]
	run -0 redlock release name "$REDLOCK_TOKEN"
}

@test "a shared holder renews its own lease past the TTL" {
	run -0 redlock -s -t 300ms name sh -c 'sleep 1; redis-cli -s "$REDIS_SOCK" EXISTS "$REDLOCK_KEY"'
	assert_output 1
	assert key_absent redlock:name
}

@test "a shared request inside a shared holder of the same name is re-entrant" {
	run -0 redlock -s name "$RL" -s -n name sh -c 'echo "$REDLOCK_TOKEN"'
	assert_regex "$output" "$UUID_RE"
}

@test "an exclusive request inside a shared holder of the same name fails at once" {
	run -1 --separate-stderr redlock -s name "$RL" name true
	assert_equal "$stderr" "redlock: lock 'name' is held shared by an enclosing redlock: an exclusive request would wait for itself"
	# A status the caller chose (-E) makes it quiet, as any conflict.
	run -7 --separate-stderr redlock -s name "$RL" -E 7 name true
	assert_equal "$stderr" ''
}

@test "a shared request inside an exclusive holder of the same name is re-entrant" {
	run -0 redlock name "$RL" -s -n name true
}

@test "--limit must be a whole number of at least 1" {
	for bad in 0 -1 x 1.5 '' 1000001; do
		run --separate-stderr redlock --limit "$bad" name true
		assert_usage_error
	done
}

@test "-s and --limit with several servers are a usage error" {
	run --separate-stderr redlock -s -u "unix://$REDIS_SOCK" -u redis://127.0.0.1:1 name true
	assert_usage_error
	assert_regex "$stderr" 'need one server'
	run --separate-stderr redlock --limit 2 -u "unix://$REDIS_SOCK" -u redis://127.0.0.1:1 name true
	assert_usage_error
	REDLOCK_URL="unix://$REDIS_SOCK,redis://127.0.0.1:1" run --separate-stderr redlock acquire -s name
	assert_usage_error
	assert_equal "$(rcli DBSIZE)" 0
}

@test "an uncontended exclusive lock runs none of the shared-lock commands" {
	run -0 redlock name true
	rcli CONFIG RESETSTAT >/dev/null
	run -0 redlock name true
	run -0 --separate-stderr redlock acquire name
	run -0 redlock release name "$output"
	local stats
	stats=$(rcli INFO commandstats | tr -d '\r')
	# Two scripts a lock (acquire, release), each on its usual path: the
	# fence takes the server's TIME, and nothing of a shared lock.
	assert_regex "$stats" 'cmdstat_evalsha:calls=4,'
	assert_regex "$stats" 'cmdstat_time:calls=2,'
	refute_regex "$stats" 'cmdstat_(z[a-z]+|sismember|scard|smembers|type|hget|pttl):'
}
