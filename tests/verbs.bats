#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The terminal verbs (the verbs in redlock(1)): acquire, release, extend, status, list,
# break; and the fencing token across them (redlock(1), "Running a command under the lock").

load helpers

lifecycle main

# acquire_tok NAME [OPTION...]: acquire, print the token.
acquire_tok() {
	local name=$1
	shift
	redlock acquire "$@" "$name"
}

# json_get JSON MEMBER: print a member of a JSON object (python repr for
# non-strings: True/False/None/numbers).
json_get() {
	/usr/bin/python3 -c '
import json, sys
v = json.loads(sys.argv[1])[sys.argv[2]]
print(v if isinstance(v, str) else repr(v))' "$1" "$2"
}

# --- acquire ------------------------------------------------------------------

@test "acquire prints the token as the only line of stdout and exits 0" {
	run -0 --separate-stderr redlock acquire -t 5m deploy
	assert_equal "${#lines[@]}" 1
	assert_regex "$output" "$UUID_RE"
	assert_equal "$stderr" ''
	assert_equal "$(rcli GET redlock:deploy)" "$output"
	local ttl
	ttl=$(rcli PTTL redlock:deploy)
	assert [ "$ttl" -gt 240000 ]
	assert [ "$ttl" -le 300000 ]
}

@test "an acquired lock outlives the acquire process and excludes others" {
	acquire_tok deploy -t 1m >/dev/null
	run -1 redlock -n deploy true
	run -1 --separate-stderr redlock acquire -n deploy
	assert_equal "$output" ''
}

@test "acquire -n on a held lock exits with the -E status and prints nothing on stdout" {
	acquire_tok deploy -t 1m >/dev/null
	run -9 --separate-stderr redlock acquire -n -E 9 deploy
	assert_equal "$output" ''
	assert_diagnostics
}

@test "acquire -w waits for the lock to come free" {
	acquire_tok deploy -t 1s >/dev/null
	local t0 t1
	t0=$(now_ms)
	run -0 redlock acquire -w 20s deploy
	t1=$(now_ms)
	assert_regex "$output" "$UUID_RE"
	assert [ $((t1 - t0)) -lt "$(scale_ms 10000)" ]
}

@test "acquire -w gives up with the conflict status" {
	acquire_tok deploy -t 1m >/dev/null
	run -1 --separate-stderr redlock acquire -w 300ms deploy
	assert_equal "$output" ''
	assert_diagnostics
}

@test "acquire --env prints shell assignments for eval" {
	run -0 --separate-stderr redlock acquire --env -t 1m deploy
	local vars=$output
	(
		unset REDLOCK_NAME REDLOCK_KEY REDLOCK_TOKEN REDLOCK_FENCE
		eval "$vars"
		[[ $REDLOCK_NAME == deploy ]] || fail "REDLOCK_NAME=$REDLOCK_NAME"
		[[ $REDLOCK_KEY == redlock:deploy ]] || fail "REDLOCK_KEY=$REDLOCK_KEY"
		[[ $REDLOCK_TOKEN =~ $UUID_RE ]] || fail "REDLOCK_TOKEN=$REDLOCK_TOKEN"
		[[ $REDLOCK_FENCE =~ ^[0-9]+$ ]] || fail "REDLOCK_FENCE=$REDLOCK_FENCE"
		[[ $(rcli GET redlock:deploy) == "$REDLOCK_TOKEN" ]] || fail "token is not the key's value"
	)
}

@test "acquire --env quotes an odd NAME so that eval gives it back" {
	local name=$'it\'s a "name" $(x) `y`\n%n'
	run -0 redlock acquire --env -t 1m "$name"
	local vars=$output
	(
		eval "$vars"
		[[ $REDLOCK_NAME == "$name" ]] || fail "REDLOCK_NAME=$REDLOCK_NAME"
		[[ $REDLOCK_KEY == "redlock:$name" ]] || fail "REDLOCK_KEY=$REDLOCK_KEY"
	)
}

@test "verbs accept options after their operands" {
	run -0 redlock acquire deploy -t 1m -p 'v:'
	assert_regex "$output" "$UUID_RE"
	assert_equal "$(rcli GET v:deploy)" "$output"
}

@test "acquire inside a command holding the same lock prints the inherited token" {
	# man page, Re-entrance: acquire is re-entrant and takes nothing.
	run -0 --separate-stderr redlock name sh -c '
		t=$(redlock acquire -n -t 1m name) || exit 9
		[ "$t" = "$REDLOCK_TOKEN" ] || { echo "acquire printed $t"; exit 8; }
		redis-cli -s "$REDIS_SOCK" PTTL "$REDLOCK_KEY"'
	# The default 30 s TTL of the outer lock, not the 1 min of acquire.
	assert [ "$output" -le 30000 ]
	assert key_absent redlock:name
}

@test "a re-entrant acquire that cannot write its token says that the lock stays with the enclosing redlock" {
	run -0 --separate-stderr redlock name sh -c '
		redlock acquire name >&-; echo "status $?"
		redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY"; echo "$REDLOCK_TOKEN"'
	assert_line -n 0 'status 74'
	assert_equal "${lines[1]}" "${lines[2]}"
	assert_equal "$stderr" "redlock: cannot write the token of lock 'name' to stdout; the lock stays with the enclosing redlock"
}

# --- release ------------------------------------------------------------------

@test "release with the holding token frees the lock" {
	local tok
	tok=$(acquire_tok deploy -t 1m)
	run -0 --separate-stderr redlock release deploy "$tok"
	assert_equal "$output" ''
	assert key_absent redlock:deploy
	run -0 redlock -n deploy true
}

@test "release with another token exits 1, says so and leaves the lock" {
	local tok
	tok=$(acquire_tok deploy -t 1m)
	run -1 --separate-stderr redlock release deploy 00000000-0000-4000-8000-000000000000
	assert [ "${#stderr_lines[@]}" -ge 1 ]
	assert_diagnostics
	assert_equal "$(rcli GET redlock:deploy)" "$tok"
	run -3 redlock release -E 3 deploy not-a-token
	assert_equal "$(rcli GET redlock:deploy)" "$tok"
}

@test "release of a free lock exits with the conflict status" {
	run -1 --separate-stderr redlock release deploy 00000000-0000-4000-8000-000000000000
	assert_diagnostics
	run -5 redlock release -E 5 deploy 00000000-0000-4000-8000-000000000000
}

@test "-v on acquire, extend and release says what each did; without it they say nothing" {
	local tok
	run -0 --separate-stderr redlock -v acquire deploy
	tok=$output
	assert_regex "$stderr" "^redlock: acquired lock 'deploy' \(fence [0-9]+\)$"
	run -0 --separate-stderr redlock -v extend deploy "$tok"
	assert_equal "$stderr" "redlock: extended lock 'deploy'"
	run -0 --separate-stderr redlock -v release deploy "$tok"
	assert_equal "$stderr" "redlock: released lock 'deploy'"
	run -0 --separate-stderr redlock acquire deploy
	assert_equal "$stderr" ''
	run -0 --separate-stderr redlock release deploy "$output"
	assert_equal "$stderr" ''
}

@test "a token can release its lock only once" {
	local tok
	tok=$(acquire_tok deploy -t 1m)
	run -0 redlock release deploy "$tok"
	run -1 redlock release deploy "$tok"
}

@test "release of the inherited token inside the command leaves the lock to redlock" {
	# man page, Re-entrance: release of a token in REDLOCK_HELD does
	# nothing and exits 0; the enclosing redlock releases at the end.
	run -0 --separate-stderr redlock name sh -c '
		redlock release "$REDLOCK_NAME" "$REDLOCK_TOKEN" || exit 9
		redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY"
		printf "%s\n" "$REDLOCK_TOKEN"'
	assert_equal "${lines[0]}" "${lines[1]}"
	assert key_absent redlock:name
	assert_equal "$stderr" ''
}

@test "an extend of the inherited token inside the command leaves the lease to redlock; the token given for another NAME is refused" {
	local other
	other=$(acquire_tok other -t 1m)
	# A shorter -t would cut the lease the enclosing redlock counts on:
	# the key keeps its TTL, and no one else gets the lock.
	run -0 --separate-stderr redlock -t 30s name sh -c '
		redlock extend -t 500ms "$REDLOCK_NAME" "$REDLOCK_TOKEN" || exit 9
		redis-cli -s "$REDIS_SOCK" PTTL "$REDLOCK_KEY"
		redlock release other "$REDLOCK_TOKEN"; echo "release $?"
		redlock extend other "$REDLOCK_TOKEN"; echo "extend $?"
		redlock release -p elsewhere: name "$REDLOCK_TOKEN"; echo "prefix $?"'
	(("${lines[0]}" > 20000)) || fail "PTTL ${lines[0]}: the extend cut the lease"
	assert_line -n 1 'release 1'
	assert_line -n 2 'extend 1'
	assert_line -n 3 'prefix 1'
	assert_regex "$stderr" "cannot release lock 'other': it is held by .*, not by this token"
	assert_equal "$(rcli GET redlock:other)" "$other"
	assert key_absent redlock:name
}

# --- extend -------------------------------------------------------------------

@test "extend resets the TTL when given the holding token" {
	local tok ttl
	tok=$(acquire_tok deploy -t 2s)
	run -0 redlock extend -t 1m deploy "$tok"
	ttl=$(rcli PTTL redlock:deploy)
	assert [ "$ttl" -gt 50000 ]
	assert [ "$ttl" -le 60000 ]
	assert_equal "$(rcli GET redlock:deploy)" "$tok"
}

@test "extend can shorten the TTL too" {
	local tok ttl
	tok=$(acquire_tok deploy -t 10m)
	run -0 redlock extend -t 5s deploy "$tok"
	ttl=$(rcli PTTL redlock:deploy)
	assert [ "$ttl" -gt 0 ]
	assert [ "$ttl" -le 5000 ]
}

@test "extend with another token exits 1 and leaves the TTL alone" {
	local tok ttl
	tok=$(acquire_tok deploy -t 20s)
	run -1 --separate-stderr redlock extend -t 10m deploy 00000000-0000-4000-8000-000000000000
	assert_diagnostics
	ttl=$(rcli PTTL redlock:deploy)
	assert [ "$ttl" -le 20000 ]
	run -4 redlock extend -E 4 -t 10m deploy wrong
}

@test "extend of an expired lock exits with the conflict status" {
	local tok
	tok=$(acquire_tok deploy -t 200ms)
	wait_for_no_key redlock:deploy 10
	run -1 redlock extend -t 1m deploy "$tok"
	assert key_absent redlock:deploy
}

# --- status -----------------------------------------------------------------

@test "status of a free lock exits 1" {
	run -1 redlock status deploy
	run -1 redlock status -E 7 deploy
}

@test "status of a held lock exits 0 and never shows the token" {
	local tok
	tok=$(acquire_tok deploy -t 1m)
	run -0 --separate-stderr redlock status deploy
	assert [ -n "$output" ]
	refute_output --partial "$tok"
}

@test "status names the holder's pid and fencing token" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" deploy /bin/sh -c '
		echo "$REDLOCK_FENCE" >"$1"; : >"$2"; . "$TESTS_DIR/lib/await.sh"
		await_file "$3"' \
		holder "$d/fence" "$d/h.held" "$d/h.release"
	wait_for_file "$d/h.held" 20
	local pid fence
	pid=$(bg_pid h)
	fence=$(cat "$d/fence")
	run -0 redlock status deploy
	assert_output --partial "$pid"
	assert_output --partial "$fence"
	run -0 redlock status --json deploy
	assert_equal "${#lines[@]}" 1
	assert_equal "$(json_get "$output" held)" True
	assert_equal "$(json_get "$output" pid)" "$pid"
	assert_equal "$(json_get "$output" fence)" "$fence"
	assert_equal "$(json_get "$output" name)" deploy
	assert_equal "$(json_get "$output" key)" redlock:deploy
	release_lock h
	run -1 redlock status --json deploy
	assert_equal "$(json_get "$output" held)" False
}

@test "the holder's user is \$USER, else \$LOGNAME, else its user id's name" {
	local tok me
	me=$(id -un)
	tok=$(USER=alice LOGNAME=bob redlock acquire -t 1m who)
	assert_equal "$(json_get "$(redlock status --json who)" user)" alice
	redlock release who "$tok"
	tok=$(env -u USER LOGNAME=bob "$RL" acquire -t 1m who)
	assert_equal "$(json_get "$(redlock status --json who)" user)" bob
	redlock release who "$tok"
	tok=$(env -u USER -u LOGNAME "$RL" acquire -t 1m who)
	assert_equal "$(json_get "$(redlock status --json who)" user)" "$me"
	redlock release who "$tok"
}

@test "status --json has the members listed in the man page" {
	acquire_tok deploy -t 1m >/dev/null
	run -0 redlock status --json deploy
	run -0 /usr/bin/python3 -c '
import json, re, sys
o = json.loads(sys.argv[1])
want = "name key held ttl_ms fence foreign host pid user cmd start start_ms".split()
missing = [m for m in want if m not in o]
if missing:
    sys.exit("missing members: %s in %s" % (missing, sys.argv[1]))
assert o["held"] is True and o["foreign"] is False, sys.argv[1]
assert 0 < o["ttl_ms"] <= 60000, "ttl_ms (time left) %r" % o["ttl_ms"]
assert o["cmd"] == "(acquire)", "cmd for acquire: %r" % o["cmd"]
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", o["start"]), o["start"]
assert isinstance(o["start_ms"], int) and isinstance(o["fence"], int), sys.argv[1]
' "$output"
}

@test "status shows a lock held by another client" {
	rcli SET redlock:foreign sometoken PX 60000 >/dev/null
	run -0 redlock status --json foreign
	assert_equal "$(json_get "$output" held)" True
	assert_equal "$(json_get "$output" foreign)" True
	assert_equal "$(json_get "$output" key)" redlock:foreign
	refute_output --partial sometoken
}

# --- list -------------------------------------------------------------------

@test "list shows each held lock on one line and nothing else" {
	acquire_tok alpha -t 1m >/dev/null
	acquire_tok beta -t 1m >/dev/null
	local tok
	tok=$(acquire_tok gone -t 1m)
	redlock release gone "$tok"
	rcli SET other:zeta x >/dev/null
	run -0 --separate-stderr redlock list
	assert_equal "${#lines[@]}" 2
	assert_line --regexp '^alpha[[:space:]]'
	assert_line --regexp '^beta[[:space:]]'
	refute_output --partial gone
	refute_output --partial zeta
	refute_output --partial fence
	refute_output --partial wake
}

@test "list PATTERN is a glob on NAME" {
	local n
	for n in backup-db backup-www deploy; do
		acquire_tok "$n" -t 1m >/dev/null
	done
	run -0 redlock list 'backup-*'
	assert_equal "${#lines[@]}" 2
	assert_line --regexp '^backup-db[[:space:]]'
	assert_line --regexp '^backup-www[[:space:]]'
}

@test "list with nothing held prints nothing and exits 0" {
	run -0 --separate-stderr redlock list
	assert_equal "$output" ''
}

@test "list --json prints one JSON object a line" {
	acquire_tok alpha -t 1m >/dev/null
	acquire_tok beta -t 1m >/dev/null
	run -0 redlock list --json
	assert_equal "${#lines[@]}" 2
	local names
	names=$(printf '%s\n' "$output" | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(json.loads(l)["name"] for l in sys.stdin)))')
	assert_equal "$names" 'alpha beta'
}

@test "list uses SCAN, never KEYS" {
	acquire_tok alpha -t 1m >/dev/null
	rcli CONFIG RESETSTAT >/dev/null
	run -0 redlock list
	local stats
	stats=$(rcli INFO commandstats)
	[[ $stats == *cmdstat_scan:* ]] || fail "no SCAN: $stats"
	[[ $stats != *cmdstat_keys:* ]] || fail "KEYS was used: $stats"
}

@test "list under another prefix shows only that prefix's locks" {
	acquire_tok alpha -t 1m -p 'team1:' >/dev/null
	acquire_tok beta -t 1m >/dev/null
	run -0 redlock list -p 'team1:'
	assert_equal "${#lines[@]}" 1
	assert_line --regexp '^alpha[[:space:]]'
}

# --- break ------------------------------------------------------------------

@test "break removes a held lock, says what it removed and exits 0" {
	acquire_tok deploy -t 1m >/dev/null
	run -0 redlock break deploy
	assert [ -n "$output" ]
	assert key_absent redlock:deploy
	run -0 redlock -n deploy true
}

@test "break of a free lock exits 1" {
	run -1 redlock break deploy
}

@test "break removes a lock held by another client" {
	rcli SET redlock:deploy sometoken PX 60000 >/dev/null
	run -0 redlock break deploy
	assert key_absent redlock:deploy
}

@test "the holder of a broken lock stops its command and exits 75" {
	hold_lock h -t 1s deploy
	local child
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	run -0 redlock break deploy
	bg_wait h 15
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$child" 5
}

@test "a holder whose lock is broken, or taken over, before its next renewal finds out at the release and exits 75" {
	local d=$BATS_TEST_TMPDIR
	# Its command ends well before the renewal at a third of the TTL.
	run -75 --separate-stderr redlock -t 1m --record deploy sh -c 'redlock break deploy 2>/dev/null; exit 0'
	assert_equal "$stderr" "redlock: lock 'deploy' was lost while the command ran: it was free at its release"
	run -0 redlock runs deploy
	assert_output --regexp 'deploy +lost +75 '
	run -75 --separate-stderr redlock -t 1m deploy sh -c '
		redlock break deploy 2>/dev/null; redlock acquire -t 1m deploy >"$1"; exit 3' sh "$d/tok"
	assert_equal "$stderr" "redlock: lock 'deploy' was lost while the command ran: another holder had it at its release"
	assert_equal "$(rcli GET redlock:deploy)" "$(cat "$d/tok")"
	# --on-lost ignore is no different: the lock was lost all the same.
	run -0 redlock release deploy "$(cat "$d/tok")"
	run -75 redlock --on-lost ignore -t 1m deploy sh -c 'redlock break deploy 2>/dev/null'
}

@test "a waiter gets a broken lock at once" {
	acquire_tok deploy -t 10m >/dev/null
	bg_start w "$RL" deploy touch "$BATS_TEST_TMPDIR/w.got"
	assert stays_false -t 0.5 test -e "$BATS_TEST_TMPDIR/w.got"
	run -0 redlock break deploy
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 10
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

# --- fencing ----------------------------------------------------------------

fence_of() {
	local vars
	vars=$(redlock acquire --env "$@") || return 1
	(
		eval "$vars"
		echo "$REDLOCK_FENCE $REDLOCK_TOKEN"
	)
}

@test "the fencing token grows across release, break and expiry" {
	local f1 f2 f3 f4 tok
	read -r f1 tok < <(fence_of -t 1m deploy)
	redlock release deploy "$tok"
	read -r f2 tok < <(fence_of -t 1m deploy)
	redlock break deploy 2>/dev/null
	read -r f3 tok < <(fence_of -t 200ms deploy)
	wait_for_no_key redlock:deploy 10
	read -r f4 tok < <(fence_of -t 1m deploy)
	assert [ "$f2" -gt "$f1" ]
	assert [ "$f3" -gt "$f2" ]
	assert [ "$f4" -gt "$f3" ]
}

@test "the fencing token keeps growing after every key is deleted" {
	local f1 f2 tok
	read -r f1 tok < <(fence_of -t 1m deploy)
	rcli FLUSHALL >/dev/null
	read -r f2 tok < <(fence_of -t 1m deploy)
	assert [ "$f2" -gt "$f1" ]
}

# set_counter NAME VALUE: NAME's fencing counter holds VALUE.
set_counter() {
	rcli EVAL "return redis.call('SET', '{redlock:' .. ARGV[1] .. '}\\0fence', ARGV[2])" 0 "$1" "$2" >/dev/null
}

@test "different locks have their own fencing counters" {
	local a1 a2 b1 tok
	read -r a1 tok < <(fence_of -t 1m a)
	redlock release a "$tok"
	# a's counter far ahead of the clock: a's next fence is one above it,
	# b's is not.
	set_counter a $((a1 + 1000000000000))
	read -r b1 tok < <(fence_of -t 1m b)
	read -r a2 tok < <(fence_of -t 1m a)
	assert_equal "$a2" "$((a1 + 1000000000001))"
	assert [ "$b1" -gt "$a1" ]
	assert [ "$b1" -lt "$a2" ]
}

@test "a fencing counter that went back, as after a failover whose new master lacks the last grants, still gives a larger fence" {
	local f1 f2 tok
	read -r f1 tok < <(fence_of -t 1m gone)
	redlock release gone "$tok"
	# The counter as a replica that missed the last grants has it.
	set_counter gone $((f1 - 5))
	read -r f2 tok < <(fence_of -t 1m gone)
	assert [ "$f2" -gt "$f1" ]
	redlock release gone "$tok"
	# So for a shared hold.
	set_counter gone $((f2 - 5))
	run -0 redlock acquire -s -t 1m --env gone
	assert_regex "$output" "REDLOCK_FENCE=[0-9]+"
	local f3=${output#*REDLOCK_FENCE=}
	f3=${f3%%[^0-9]*}
	assert [ "$f3" -gt "$f2" ]
}

@test "break --fence removes the fencing counter and fences still grow" {
	local f1 f2
	f1=$(redlock fc sh -c 'echo "$REDLOCK_FENCE"')
	run -0 redlock break --fence fc
	assert_output --partial "removed the fencing counter"
	# No lock and no counter left (the wake-up list expires by itself).
	assert_equal "$(rcli KEYS '*fence*')" ''
	assert_equal "$(rcli EXISTS redlock:fc)" 0
	run -1 redlock break --fence fc
	f2=$(redlock fc sh -c 'echo "$REDLOCK_FENCE"')
	assert [ "$f2" -gt "$f1" ]
}

@test "status and list report output they cannot write: 74 with a message, as acquire does" {
	run -0 --separate-stderr redlock acquire -t 1m full
	run -74 sh -c '"$RL" status full >/dev/full'
	assert_output --partial 'cannot write'
	run -74 sh -c '"$RL" list --json >/dev/full'
	assert_output --partial 'cannot write'
	run -74 sh -c '"$RL" status --json full >&-'
	assert_output --partial 'cannot write'
	run -74 sh -c '"$RL" list >&-'
}

@test "a key that holds no string is one story: held (not a lock) for status, busy for a run, shared or not, and break removes it" {
	rcli RPUSH redlock:notstr a >/dev/null
	run -0 redlock status notstr
	assert_output --partial 'holds a list, not a lock'
	run -0 redlock status --json notstr
	assert_output --partial '"held":true'
	assert_output --partial '"type":"list"'
	run -1 redlock -n notstr true
	run -1 redlock -s -n notstr true
	refute_output --partial WRONGTYPE
	run -1 redlock --limit 2 -n notstr true
	refute_output --partial WRONGTYPE
	run -1 redlock release notstr 00000000-0000-0000-0000-000000000000
	refute_output --partial WRONGTYPE
	run -0 redlock list
	assert_output --partial notstr
	run -0 redlock break notstr
	assert key_absent redlock:notstr
	run -0 redlock -n notstr true
}
