#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# redlock stop (redlock(1), "redlock stop"): every holder sees the request at its next
# renewal, stops its command as on SIGTERM (SIGKILL after --kill-after),
# releases and exits with the command's status; stop waits until the
# holders it asked have let go.

load helpers

lifecycle main

# hold TAG [REDLOCK-OPTION...] NAME -- SCRIPT: a holder whose command is
# `sh -c SCRIPT` and creates TAG.held first; returns once it runs.
hold() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	shift
	local -a opts=()
	while [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	bg_start "$tag" "$RL" "${opts[@]}" /bin/sh -c ": >\"\$0\"; $1" "$d/$tag.held"
	wait_for_file "$d/$tag.held" 20
}

# A command that runs until stopped (at most 60 s).
FOREVER='i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'

@test "stop ends a holder whose command dies of SIGTERM, and exits 0" {
	hold h -t 1s name -- "exec sleep 60"
	run -0 --separate-stderr redlock stop name
	assert_equal "$stderr" "redlock: asked 1 holder of lock 'name' to stop"
	bg_wait h 5
	assert_equal "$BG_STATUS" 143
	assert key_absent redlock:name
	run -1 redlock status name
}

@test "a holder under --min-hold that stop ends releases at once, and so does one that --replace ends" {
	hold h -t 3s --min-hold 1m name -- "exec sleep 60"
	run -0 redlock stop -w 10 name
	bg_wait h 5
	assert_equal "$BG_STATUS" 143
	assert key_absent redlock:name
	hold h2 -t 3s --min-hold 1m name -- "exec sleep 60"
	run -0 redlock --replace -w 10 name echo replaced
	assert_output replaced
	bg_wait h2 5
	assert_equal "$BG_STATUS" 143
}

@test "a command that traps SIGTERM and exits 3 makes the holder exit 3" {
	hold h -t 1s name -- "trap 'exit 3' TERM; $FOREVER"
	run -0 redlock stop name
	bg_wait h 5
	assert_equal "$BG_STATUS" 3
	assert_regex "$(bg_err h)" "redlock stop asked its holder to stop"
}

@test "a command that ignores SIGTERM is killed after --kill-after" {
	hold h -t 2s --kill-after 700ms name -- "trap '' TERM; $FOREVER"
	local t0 t1
	t0=$(now_ms)
	run -0 redlock stop name
	t1=$(now_ms)
	bg_wait h 5
	assert_equal "$BG_STATUS" 137
	# The renewal (within 2/3 s) plus the grace, then the release.
	assert [ $((t1 - t0)) -ge 700 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 3000)" ]
}

@test "a holder sees the request within its renewal interval" {
	hold h -t 3s name -- "exec sleep 60"
	local t0 t1
	t0=$(now_ms)
	run -0 redlock stop name
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 1800)" ]
	bg_wait h 5
	assert_equal "$BG_STATUS" 143
}

@test "stop -w gives up with the conflict status when the holder takes longer" {
	hold h -t 1s --kill-after 600ms name -- "trap '' TERM; $FOREVER"
	local t0 t1
	t0=$(now_ms)
	run -1 --separate-stderr redlock stop -w 200ms name
	t1=$(now_ms)
	assert_regex "$stderr" "timed out waiting for the holders of lock 'name' to stop"
	assert [ $((t1 - t0)) -lt "$(scale_ms 1000)" ]
	run -7 redlock stop -w 100ms -E 7 name
	# The request stands: the holder still stops.
	bg_wait h 10
	assert_equal "$BG_STATUS" 137
}

@test "while a stop is pending the lock stays taken, and status and list show its holder as before" {
	hold h -t 3s --kill-after 1s name -- "trap '' TERM; $FOREVER"
	local tok
	tok=$(rcli GET redlock:name)
	run -1 redlock stop -w 200ms name
	# The request is marked in the lock itself, after the token, where
	# the holder's renewal reads it; the TTL is kept.
	assert_equal "$(rcli STRLEN redlock:name)" 41
	assert [ "$(rcli PTTL redlock:name)" -gt 0 ]
	run -0 redlock status --json name
	assert_output --partial '"held":true,'
	assert_output --partial '"host":'
	run -0 redlock list
	assert_output --regexp '^name +[0-9.]+s +[^ ]+@[^ ]+ pid [0-9]+ '
	# Another client cannot take it, nor release it with another token.
	run -1 redlock -n name true
	run -1 redlock release name "${tok%?}x"
	bg_wait h 10
	assert_equal "$BG_STATUS" 137
	assert key_absent redlock:name
}

@test "stop with nothing held exits 1 at once" {
	run -1 --separate-stderr redlock stop name
	assert_equal "$stderr" "redlock: lock 'name' is not held"
	run -1 redlock stop -w 5s name
	assert_equal "$(rcli DBSIZE)" 0
}

@test "stop on shared holders stops every one of them" {
	hold a -s -t 1s name -- "exec sleep 60"
	hold b -s -t 1s name -- "trap 'exit 4' TERM; $FOREVER"
	hold c --limit 5 -t 1s name -- "exec sleep 60"
	run -0 --separate-stderr redlock stop name
	assert_equal "$stderr" "redlock: asked 3 holders of lock 'name' to stop"
	bg_wait a 5
	assert_equal "$BG_STATUS" 143
	bg_wait b 5
	assert_equal "$BG_STATUS" 4
	bg_wait c 5
	assert_equal "$BG_STATUS" 143
	assert key_absent redlock:name
}

@test "a holder that takes the lock after the stop is not stopped" {
	hold a -t 600ms name -- "exec sleep 60"
	run -0 redlock stop name
	bg_wait a 5
	hold b -t 600ms name -- "exec sleep 60"
	# Several renewals (every 200 ms) go by without a stop.
	assert stays_false -t 1.5 pid_dead "$(bg_pid b)"
	kill -TERM "$(bg_pid b)"
	bg_wait b 5
	assert_equal "$BG_STATUS" 143
}

@test "a waiter that gets the lock from a stopped holder is not stopped, and stop does not wait for it" {
	hold a -t 600ms name -- "exec sleep 60"
	bg_start w "$RL" -t 600ms name sh -c ': >"$1"; sleep 1.5' sh "$BATS_TEST_TMPDIR/w.held"
	run -0 redlock stop name
	wait_for_file "$BATS_TEST_TMPDIR/w.held"
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "stop waits for an acquired lock's release, waking at once" {
	run -0 --separate-stderr redlock acquire -t 1m name
	local tok=$output
	run -1 redlock stop -w 300ms name
	bg_start s "$RL" stop name
	assert stays_false -t 0.5 pid_dead "$(bg_pid s)"
	run -0 redlock release name "$tok"
	bg_wait s 5
	assert_equal "$BG_STATUS" 0
}

@test "stop waits for an acquired lock's TTL to run out" {
	run -0 redlock acquire -t 1s name
	local t0 t1
	t0=$(now_ms)
	run -0 redlock stop name
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 2000)" ]
	assert key_absent redlock:name
}

@test "extend tells the holder of an acquired lock that a stop was asked" {
	run -0 --separate-stderr redlock acquire -t 1m name
	local tok=$output
	run -1 redlock stop -n name
	run -0 --separate-stderr redlock extend name "$tok"
	assert_regex "$stderr" "redlock stop asked this holder to stop"
	run -0 redlock release name "$tok"
}

@test "stop waits without spinning" {
	run -0 redlock acquire -t 1m name
	rcli CONFIG RESETSTAT >/dev/null
	run -1 redlock stop -w 2s name
	local calls
	calls=$(rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
	# One look every 250 ms at most, plus the first.
	assert [ "${calls:-0}" -le 12 ]
}

@test "stop -q says nothing, and a usage error sends nothing" {
	hold h -t 1s name -- "exec sleep 60"
	run -0 --separate-stderr redlock stop -q name
	assert_equal "$stderr" ''
	bg_wait h 5
	run --separate-stderr redlock stop
	assert_usage_error
	run --separate-stderr redlock stop a b
	assert_usage_error
}

@test "a signal to stop while it waits exits 128+N" {
	run -0 redlock acquire -t 1m name
	bg_start s "$RL" stop name
	wait_until -t 5 test -s "$BATS_TEST_TMPDIR/s.err"
	kill -INT "$(bg_pid s)"
	bg_wait s 5
	assert_equal "$BG_STATUS" 130
}

@test "stop never rewrites another client's lock: its value and TTL stay, stop waits for it, and -n does not claim to have waited" {
	rcli SET redlock:py pytoken PX 3000 >/dev/null
	run -1 redlock stop -n py
	assert_output --partial 'cannot be asked'
	assert_output --partial '-n'
	refute_output --partial 'timed out'
	refute_output --partial 'waiting for its release'
	assert_equal "$(rcli GET redlock:py)" pytoken
	local pttl
	pttl=$(rcli PTTL redlock:py)
	((pttl > 1000 && pttl <= 3000)) || fail "TTL changed: $pttl"
	# The value is redis-py's to release: its own check-and-delete works.
	run -0 redlock stop -w 10s py
	assert key_absent redlock:py
	rcli SET redlock:py2 tok2 PX 5000 >/dev/null
	bg_start s "$RL" stop -w 20s py2
	wait_until grep -q 'cannot be asked' "$BATS_TEST_TMPDIR/s.err"
	assert_equal "$(rcli GET redlock:py2)" tok2
	rcli DEL redlock:py2 >/dev/null
	bg_wait s
	assert_equal "$BG_STATUS" 0
}
