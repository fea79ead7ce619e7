#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --replace (SPEC section 15): ask the holders of NAME to stop, as
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
		took=$(($(head -n 1 "$d/order" | cut -d' ' -f2) - $(freed_ms h)))
		((took >= 0)) || fail "the replacement started $((-took)) ms before the old tree was gone"
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
