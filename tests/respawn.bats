#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --respawn (SCHEDULING in redlock-scheduling(7)): a leader with standbys.  Three standbys
# run the same command; the leader's tree is SIGKILLed, the leader is
# SIGSTOPped past its TTL, or its server connection is cut (each standby
# reaches the server through a proxy.py of its own); every time a new
# leader must run within TAKEOVER_LIMIT_MS (below), and no two leaders'
# commands overlap (the flock(1) oracle of fault_helpers.bash).  make
# check runs a few rounds of each kind; make soak runs
# REDLOCK_RESPAWN_ROUNDS (100) of each.

load helpers
load fault_helpers
lifecycle main

TTL_MS=2000
DELAY_MS=500

# proxy_n I: a proxy.py in front of the server for standby I; sets
# PROXY_URL_I.  proxy_n_set I MODE: as proxy_set.
proxy_n() {
	local d=$BATS_TEST_TMPDIR i=$1
	bg_start "proxy$i" /usr/bin/python3 "$TESTS_DIR/proxy.py" "$REDIS_SOCK" \
		"$d/proxy$i.port" "$d/proxy$i.control" "$d/proxy$i.status"
	wait_for_file "$d/proxy$i.port" 10
	printf -v "PROXY_URL_$i" 'redis://127.0.0.1:%s' "$(cat "$d/proxy$i.port")"
}
proxy_n_set() {
	local d=$BATS_TEST_TMPDIR g
	g=$(date +%s%N)
	echo "$g ${*:2}" >"$d/proxy$1.control.tmp"
	mv "$d/proxy$1.control.tmp" "$d/proxy$1.control"
	wait_until -t 5 _proxy_n_has "$1" "$g"
}
_proxy_n_has() {
	local w
	{ read -r w _ <"$BATS_TEST_TMPDIR/proxy$1.status"; } 2>/dev/null && [[ $w == "$2" ]]
}

# standby TAG URL: (TAG is s1, s2 or s3: it reaches the server through
# proxy 1, 2 or 3) a respawning redlock whose command, under the oracle,
# appends "TAG START_MS FENCE" to the file leaders and runs until
# killed; an overlap caught by the oracle goes to the file overlaps.
standby() {
	local d=$BATS_TEST_TMPDIR
	bg_start "$1" "$RL" --respawn -v -u "$2" -t ${TTL_MS}ms \
		--lock-delay ${DELAY_MS}ms lead /bin/sh -c '
		flock -n -E 99 "$1/oracle" /bin/sh -c "
			echo \"$2 \$(date +%s%3N) \$REDLOCK_FENCE\" >>\"$1/leaders\"
			exec sleep 600" || echo "$2 $?" >>"$1/overlaps"' sh "$d" "$1"
}

leaders() { wc -l <"$BATS_TEST_TMPDIR/leaders" 2>/dev/null || echo 0; }
more_leaders() { (($(leaders) > $1)); }
leader_tag() { tail -n 1 "$BATS_TEST_TMPDIR/leaders" | cut -d' ' -f1; }
leader_start() { tail -n 1 "$BATS_TEST_TMPDIR/leaders" | cut -d' ' -f2; }

# fault KIND TAG: do KIND to the leader TAG; echo nothing.
fault() {
	local kind=$1 tag=$2 pid
	pid=$(bg_pid "$tag")
	case $kind in
	kill) _kill_session "$pid" ;;
	stop) stop_pid "$pid" ;;
	cut) proxy_n_set "${tag#s}" blackhole ;;
	esac
}

# mend KIND TAG: undo the fault once a new leader runs.
mend() {
	local kind=$1 tag=$2
	case $kind in
	kill)
		wait "$(bg_pid "$tag")" 2>/dev/null || true
		standby "$tag" "$(proxy_url "${tag#s}")"
		;;
	stop) cont_pid "$(bg_pid "$tag")" ;;
	cut) proxy_n_set "${tag#s}" pass ;;
	esac
}
proxy_url() { local v="PROXY_URL_$1"; echo "${!v}"; }

# The bound on one takeover.  The product's part is TTL + lock-delay and
# a poll (about 2.7 s here); the rest is the new leader's own start (a
# wake-up, a fork for the guard, sh, flock, sh and date) on a machine
# that runs five other test files beside this one: on two loaded
# processors that start alone was seen to take 1.7 s (a 4.2 s takeover
# whose standby logged its grant 0.4 s after the lock-delay's end).  So
# the bound is generous, three times the product's part: it catches a
# standby that backs off for seconds (the defect this test once found;
# "a leader that loses its lock three times" times that one exactly),
# and the median and worst takeovers are reported for a person to read
# (make soak runs 100 rounds of each).
TAKEOVER_LIMIT_MS=$((3 * (TTL_MS + DELAY_MS)))

# rounds KIND N: N takeovers after KIND; appends each takeover time (ms
# from the fault to the new leader's start) to the file takeovers.
rounds() {
	local kind=$1 n=$2 r tag before t0 took limit=$TAKEOVER_LIMIT_MS
	for ((r = 0; r < n; r++)); do
		tag=$(leader_tag)
		before=$(leaders)
		t0=$(now_ms)
		fault "$kind" "$tag"
		wait_until -t 15 more_leaders "$before" ||
			fail "$kind round $r: no new leader after $(($(now_ms) - t0)) ms"
		took=$(($(leader_start) - t0))
		echo "$kind $took" >>"$BATS_TEST_TMPDIR/takeovers"
		((took <= limit)) || fail "$kind round $r: a new leader after $took ms (limit $limit); the standbys said: $(tail -n 3 "$BATS_TEST_TMPDIR"/s?.err)"
		[[ $(leader_tag) != "$tag" ]] || fail "$kind round $r: the faulty leader $tag led again"
		mend "$kind" "$tag"
		[[ ! -e $BATS_TEST_TMPDIR/overlaps ]] ||
			fail "$kind round $r: overlap: $(cat "$BATS_TEST_TMPDIR/overlaps")"
	done
}

# report: the median and worst takeover of each kind, as TAP comments.
report() {
	local kind
	for kind in kill stop cut; do
		awk -v k=$kind '$1 == k { print $2 }' "$BATS_TEST_TMPDIR/takeovers" | sort -n |
			awk -v k=$kind '{ v[NR] = $1 } END { if (NR) printf "# --respawn takeover after %s: median %d ms, worst %d ms over %d rounds\n", k, v[int((NR + 1) / 2)], v[NR], NR }' >&3
	done
}

@test "three standbys: a new leader after a kill, a stop or a cut, within three times TTL + lock-delay, never overlapping" {
	local n=${REDLOCK_RESPAWN_ROUNDS:-5} i
	for i in 1 2 3; do
		proxy_n "$i"
		standby "s$i" "$(proxy_url "$i")"
	done
	wait_until -t 10 more_leaders 0
	rounds kill "$n"
	rounds stop "$n"
	rounds cut "$n"
	report
	# Fences strictly increase from leader to leader.
	run awk 'NR > 1 && $3 <= f { print "line " NR ": fence " $3 " after " f; bad = 1 } { f = $3 } END { exit bad }' \
		"$BATS_TEST_TMPDIR/leaders"
	assert_success
}

@test "status and list show the standbys waiting" {
	local i
	for i in 1 2 3; do
		bg_start "s$i" "$RL" --respawn -t 5s lead sleep 600
	done
	wait_until -t 10 key_exists redlock:lead
	wait_until -t 5 _standbys 2
	run -0 redlock status lead
	assert_line 'waiters: 2 (2 standbys)'
	run -0 redlock list
	assert_line --partial '[waiters: 2, standbys: 2]'
	run -0 redlock status --json lead
	assert_regex "$output" '"waiters":2,"standbys":2'
}
_standbys() { [[ $(redlock status lead) == *"waiters: $1 ($1 standbys)"* ]]; }

@test "a command that fails at once is run again after 1 s, then 2 s: the back-off doubles" {
	local d=$BATS_TEST_TMPDIR
	bg_start r "$RL" --respawn job /bin/sh -c 'date +%s%3N >>"$1/starts"; exit 3' sh "$d"
	wait_until -t 10 _starts 3
	kill -TERM "$(bg_pid r)"
	bg_wait r 5
	assert_equal "$BG_STATUS" 143
	run awk 'NR == 2 { a = $1 - p } NR == 3 { b = $1 - p } { p = $1 }
		END { if (a < 950 || a > 1600 || b < 1950 || b > 2700) { print a, b; exit 1 } }' "$d/starts"
	assert_success
}
_starts() { (($(wc -l <"$BATS_TEST_TMPDIR/starts" 2>/dev/null || echo 0) >= $1)); }

@test "a signal ends a respawning redlock: 128+N while it waits, the command's status while it runs" {
	hold_lock h job
	bg_start w "$RL" --respawn job true
	wait_until -t 5 _standbys_job
	kill -TERM "$(bg_pid w)"
	bg_wait w 5
	assert_equal "$BG_STATUS" 143
	release_lock h
	# The leader: SIGTERM goes to the command, which dies of it; no new round.
	local d=$BATS_TEST_TMPDIR
	bg_start l "$RL" --respawn job /bin/sh -c 'echo run >>"$1/runs"; exec sleep 600' sh "$d"
	wait_for_file "$d/runs" 10
	kill -TERM "$(bg_pid l)"
	bg_wait l 10
	assert_equal "$BG_STATUS" 143
	assert_equal "$(wc -l <"$d/runs")" 1
	run -0 redlock -n job true
}
_standbys_job() { [[ $(redlock status job) == *'(1 standby)'* ]]; }

@test "a waiting standby goes on waiting after SIGUSR1 and SIGUSR2, as in its pause; SIGTERM still ends it" {
	local d=$BATS_TEST_TMPDIR
	hold_lock h job
	bg_start w "$RL" --respawn -v job /bin/sh -c 'echo run >>"$1/runs"; exec sleep 600' sh "$d"
	wait_until -t 5 _standbys_job
	kill -USR1 "$(bg_pid w)"
	wait_until -t 5 _ignored w 10
	kill -USR2 "$(bg_pid w)"
	wait_until -t 5 _ignored w 12
	assert pid_alive "$(bg_pid w)"
	# Still a standby: it takes the lock when the holder lets go.
	release_lock h
	wait_until -t 10 _runs 1
	kill -TERM "$(bg_pid w)"
	bg_wait w 10
	assert_equal "$BG_STATUS" 143
}
_ignored() { grep -q "signal $2 ignored: no command runs to take it" "$BATS_TEST_TMPDIR/$1.err"; }

@test "redlock stop ends the leader's run, not the standby: it campaigns again; REDLOCK_RESPAWN=1 is --respawn" {
	local d=$BATS_TEST_TMPDIR
	REDLOCK_RESPAWN=1 bg_start l "$RL" -t 3s job /bin/sh -c 'echo run >>"$1/runs"; exec sleep 600' sh "$d"
	wait_for_file "$d/runs" 10
	run -0 redlock stop -w 10 job
	wait_until -t 10 _runs 2
	assert pid_alive "$(bg_pid l)"
}
_runs() { (($({ wc -l <"$BATS_TEST_TMPDIR/runs"; } 2>/dev/null || echo 0) >= $1)); }

@test "a leader that loses its lock three times comes back after 1 s each time: a lost lease does not double the back-off" {
	local d=$BATS_TEST_TMPDIR r
	bg_start l "$RL" --respawn -v -t 1500ms job /bin/sh -c 'echo run >>"$1/runs"; exec sleep 600' sh "$d"
	for r in 1 2 3; do
		wait_until -t 10 _runs "$r"
		run -0 redlock break job
		wait_until -t 10 _lost_rounds "$r"
	done
	run grep -c 'ended with status 75 after .* campaigning again in 1000 ms' "$d/l.err"
	assert_output 3
}
_lost_rounds() { (($(grep -c 'ended with status 75' "$BATS_TEST_TMPDIR/l.err") >= $1)); }
