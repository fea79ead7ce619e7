#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --replace (SCHEDULING in redlock-scheduling(7)): ask the holders of NAME to stop, as
# redlock stop does, go ahead of the ordinary waiters, and start the
# command only once the old holder's whole tree is gone and its lease
# released or expired.  Overlaps are caught by the flock(1) oracle of
# fault_helpers.bash; TAG.alive tells when a holder's last process died.

load helpers
load fault_helpers
lifecycle main

# slow_holder TAG [REDLOCK-OPTION...] NAME: a holder whose command, under
# the oracle, traps SIGTERM and takes a second to exit 0 (with a
# background child that goes with it).
slow_holder() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	shift
	: >"$d/$tag.alive"
	bg_start "$tag" "$RL" "$@" flock -n -E 99 "$ORACLE" \
		flock "$d/$tag.alive" /bin/sh -c '
		trap "sleep 1; kill \$c; exit 0" TERM
		sleep 600 & c=$!
		: >"$1/$2.held"
		wait' sh "$d" "$tag"
	wait_for_file "$d/$tag.held" 10
	watch_free "$tag"
}

# runner TAG [REDLOCK-OPTION...] NAME: a run whose command, under the
# oracle, appends "TAG START_MS" to the file order.
runner() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	shift
	bg_start "$tag" "$RL" "$@" flock -n -E 99 "$ORACLE" /bin/sh -c \
		'echo "$2 $(date +%s%3N)" >>"$1/order"; sleep 0.3' sh "$d" "$tag"
}

blocked() { (($(rcli CLIENT LIST | grep -c 'cmd=blpop') >= $1)); }

@test "a holder that takes a second to stop, a --replace and a waiter: no overlap, the replacement runs first, once the old tree is gone" {
	local d=$BATS_TEST_TMPDIR took r all=()
	for ((r = 0; r < 5; r++)); do
		rm -f "$d/order" "$d"/{h,w,x}.*
		slow_holder h -t 4s --kill-after 2s job
		runner w -w 20 job
		wait_until -t 5 blocked 1
		runner x -v --replace -w 20 job
		bg_wait x 20
		assert_equal "$BG_STATUS" 0
		bg_wait w 20
		assert_equal "$BG_STATUS" 0
		# Asked as by SIGTERM: the flock(1) of the oracle dies of it,
		# while the trap takes its second.
		bg_wait h 10
		assert_equal "$BG_STATUS" 143
		assert_equal "$(cut -d' ' -f1 "$d/order" | tr '\n' ' ')" "x w "
		# The oracle (flock -n, exit 99) is what proves no overlap: x
		# exited 0.  The stamps add that x started after the old tree
		# was gone, give or take the watcher's own wake-up: it stamps
		# when it is scheduled after the release, which on a loaded
		# machine came 1 ms after x's first stamp once.  20 ms of room.
		took=$(($(head -n 1 "$d/order" | cut -d' ' -f2) - $(freed_ms h)))
		((took >= -20)) || fail "the replacement started $((-took)) ms before the old tree was gone"
		all+=("$took")
		assert_regex "$(bg_err x)" "asked 1 holder of lock 'job' to stop"
	done
	printf '%s\n' "${all[@]}" | sort -n |
		awk '{ v[NR] = $1 } END { printf "# --replace takeover after the old tree is gone: median %d ms, worst %d ms over %d rounds\n", v[int((NR + 1) / 2)], v[NR], NR }' >&3
}

@test "an acquired lock left to expire: the replacement gets it at the expiry, before the waiter" {
	local d=$BATS_TEST_TMPDIR exp
	run -0 redlock acquire -t 2s job
	runner w -w 20 job
	wait_until -t 5 blocked 1
	runner x --replace -w 20 job
	bg_wait x 20
	assert_equal "$BG_STATUS" 0
	bg_wait w 20
	assert_equal "$(cut -d' ' -f1 "$d/order" | tr '\n' ' ')" "x w "
}

@test "a foreign holder cannot be asked: --replace waits like a waiter, bounded by -w, and leaves its value alone" {
	rcli SET redlock:job foreign PX 60000 >/dev/null
	run -1 --separate-stderr redlock -v --replace -w 1 job true
	assert_regex "$stderr" 'held by another client, which cannot be asked to stop'
	assert_equal "$(rcli GET redlock:job)" foreign
	rcli SET redlock:job foreign PX 1500 >/dev/null
	runner w -w 20 job
	wait_until -t 5 blocked 1
	runner x --replace -w 20 job
	bg_wait x 20
	assert_equal "$BG_STATUS" 0
	bg_wait w 20
	assert_equal "$(cut -d' ' -f1 "$BATS_TEST_TMPDIR/order" | tr '\n' ' ')" "x w "
}

@test "a free lock is taken at once; REDLOCK_REPLACE=1 is --replace; -s is refused" {
	run -0 redlock --replace job true
	hold_lock h -t 3s job
	REDLOCK_REPLACE=1 run -0 redlock -w 20 job true
	bg_wait h 10
	assert_equal "$BG_STATUS" 143
	run --separate-stderr redlock -s --replace job true
	assert_usage_error
}

@test "a waiter that finds a claim says so under -v and waits for the claimant" {
	slow_holder h -t 4s --kill-after 2s job
	runner x --replace -w 20 job
	wait_until -t 10 _claimed
	run -1 --separate-stderr redlock -v -n job true
	bg_wait x 20
	assert_equal "$BG_STATUS" 0
}
_claimed() { [[ $(rcli GET redlock:job) == *stop* ]]; }

# The server's clock in ms, and the ms of a --replace claim that status
# reports on a free lock (0: none).
srv_ms() {
	local t
	mapfile -t t < <(rcli TIME)
	echo $((t[0] * 1000 + t[1] / 1000))
}
# aux CMD SUFFIX: CMD on NAME job's key "{redlock:job}\0SUFFIX".
aux() {
	rcli EVAL "return redis.call(ARGV[1], '{redlock:job}' .. string.char(0) .. ARGV[2])" 0 "$@"
}
claim_left() {
	local j
	j=$(redlock status --json job)
	[[ $j == '{'* ]] || return 1
	[[ $j =~ \"claim_ms\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}

@test "a replacement that gave up while another client held NAME: its claim lapses 2 s after its last assertion, not 2 s after the key" {
	local gave left took
	rcli SET redlock:job foreign PX 20000 >/dev/null
	run -1 redlock -q --replace -w 1 job true
	gave=$(srv_ms)
	rcli DEL redlock:job >/dev/null
	left=$(claim_left)
	((left > 0 && left <= 2000)) || fail "claim left after the replacement gave up: $left ms (want at most 2000)"
	run -0 redlock -w 10 job true
	took=$(($(srv_ms) - gave))
	((took <= 2000 + 1000)) || fail "granted $took ms after the replacement gave up (its claim must lapse 2000 ms after its last assertion)"
}

@test "a replacement that gave up before the holder it asked let go: the release leaves no claim standing past 2 s after its last assertion" {
	local d=$BATS_TEST_TMPDIR gave end
	# Stops within a renewal (2 s), then takes 3 s over SIGTERM.
	bg_start h "$RL" -t 6s --kill-after 3.5s job /bin/sh -c '
		trap "sleep 3; kill \$c; exit 0" TERM
		sleep 600 & c=$!
		: >"$1/h.held"
		wait' sh "$d"
	wait_for_file "$d/h.held" 10
	run -1 redlock -q --replace -w 0.2 job true
	gave=$(srv_ms)
	# The claim in the holder's record ends 2 s after the last assertion.
	end=$(aux GET holder | tr '\0' '\n' | sed -n 11p)
	((end > gave + 1500 && end <= gave + 2000)) ||
		fail "the claim's end is $((end - gave)) ms after the replacement gave up (want about 2000)"
	bg_wait h 15
	assert_equal "$BG_STATUS" 0
	((($(srv_ms) - gave) > 2000)) || fail "the holder let go within 2 s"
	run -1 --separate-stderr redlock status job
	assert_output --partial "state:   free"
	refute_output --partial claimed
	run -0 redlock -n job true
}

@test "a replacement stopped by a signal while it waits takes its claim back: nothing of it is left" {
	local tok sig
	for sig in TERM INT; do
		rcli FLUSHALL >/dev/null
		tok=$(redlock acquire -t 20s job)
		bg_start r "$RL" --replace -w 20 job true
		wait_until -t 5 blocked 1
		kill -"$sig" "$(bg_pid r)"
		bg_wait r 10
		assert_equal "$BG_STATUS" $((128 + $(kill -l "$sig")))
		run -0 redlock release job "$tok"
		run -1 redlock status job
		assert_line 'state:   free'
		run -0 redlock -n job true
		assert_equal "$(rcli --scan | grep -cv '}$' || true)" 0
	done
}

@test "--replace with -n or -w 0 is a usage error, and the holder is not asked to stop" {
	hold_lock h job
	run --separate-stderr redlock --replace -n job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" '^redlock: --replace waits for the holder it asks to stop: give -w, not -n$'
	run --separate-stderr redlock --replace -w 0 job true
	assert_usage_error
	REDLOCK_REPLACE=1 run --separate-stderr redlock -n job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" '^redlock: REDLOCK_REPLACE waits'
	REDLOCK_REPLACE=1 run --separate-stderr redlock acquire -n job
	assert_usage_error
	[[ $(rcli GET redlock:job) != *stop* ]] || fail "the holder was asked to stop"
	assert_equal "$(aux EXISTS stop)" 0
	run -0 redlock status job
	assert_output --partial 'state:   held'
	release_lock h
	assert_equal "$BG_STATUS" 0
}

@test "two replacements at once: the later one's claim wins, it runs to its end, then the earlier one runs" {
	local d=$BATS_TEST_TMPDIR r
	for ((r = 0; r < 3; r++)); do
		rm -f "$d/order" "$d"/{h,b,c}.*
		slow_holder h -t 4s --kill-after 2s job
		for t in b c; do
			bg_start "$t" "$RL" -v -t 2s --replace -w 40 job \
				flock -n -E 99 "$ORACLE" /bin/sh -c \
				'echo "$2 start" >>"$1/order"; sleep 1.5
				echo "$2 end" >>"$1/order"' sh "$d" "$t"
			wait_until -t 5 grep -q 'asked 1 holder' "$d/$t.err"
		done
		bg_wait c 30
		assert_equal "$BG_STATUS" 0
		bg_wait b 30
		assert_equal "$BG_STATUS" 0
		bg_wait h 10
		assert_equal "$BG_STATUS" 143
		assert_equal "$(tr '\n' ' ' <"$d/order")" "c start c end b start b end "
		assert_regex "$(bg_err b)" "a later --replace claimed lock 'job'"
	done
}

@test "a holder stopped by --replace whose command exits 0 is no success: --replace --once-per runs, and the old run's outcome is stopped everywhere" {
	local d=$BATS_TEST_TMPDIR
	bg_start old "$RL" -t 3s --once-per 1h --record \
		--on-exit "echo \"\$REDLOCK_OUTCOME\" >$d/old.outcome" job \
		/bin/sh -c '. "$TESTS_DIR/lib/await.sh"; trap "exit 0" TERM
		: >"$1"; await_file "$1.never"' sh "$d/old.held"
	wait_for_file "$d/old.held" 20
	run -0 --separate-stderr "$RL" --replace --once-per 1h job echo replaced
	assert_output replaced
	bg_wait old 20
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat "$d/old.outcome")" stopped
	# The record says so: a stopped run and no success.
	run "$RL" status job
	assert_line --partial "last run: stopped"
	assert_line "last ok:  none recorded"
}

@test "a free lock held back by a --replace claim is called so by -n, as status calls it, not held by someone else" {
	rcli SET redlock:job foreign PX 20000 >/dev/null
	run -1 redlock -q --replace -w 1 job true
	rcli DEL redlock:job >/dev/null
	# (Within the claim's 2 s: a run and its look at the servers take
	# milliseconds.)
	run -1 --separate-stderr redlock -n job true
	assert_regex "$stderr" "^redlock: lock 'job' is free, claimed by a --replace \([0-9.]+m?s left\)$"
}
