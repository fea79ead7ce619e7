#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --once-per PERIOD (SCHEDULING in redlock-scheduling(7)): at most one successful run of NAME
# per period of the server's clock, whatever the hosts' clocks say; a run
# that gets the lock in a period that already had a success skips its
# command with the conflict status; a failed run leaves the period open.
# The "hosts" are loops run under libfaketime with their clocks 90 s
# behind, right, and 90 s ahead, each running the job at every tick of
# its own, as cron on three machines would; the periods are short (1.5 s)
# so that a dozen of them fit in well under a minute.

load helpers
lifecycle main

PERIOD_MS=1500

# server_ms: the server's clock (TIME) in ms.
server_ms() {
	local sec usec
	read -r sec usec <<<"$(rcli TIME | tr '\n' ' ')"
	echo $((sec * 1000 + 10#$usec / 1000))
}

# The job: logs "start end ok HOST" in server ms, or fails once when the
# file fail is there ("start fail HOST").  It reads the server's clock
# with redis-cli outside the host's fake clock (libfaketime and
# jemalloc do not always get along).
write_job() {
	cat >"$BATS_TEST_TMPDIR/job" <<JOB
#!/bin/sh
unset LD_PRELOAD FAKETIME FAKETIME_SHARED
ms() { redis-cli -s "$REDIS_SOCK" TIME | { read -r s; read -r u; echo \$((s * 1000 + u / 1000)); }; }
s=\$(ms)
if mv "$BATS_TEST_TMPDIR/fail" "$BATS_TEST_TMPDIR/failed" 2>/dev/null; then
	echo "\$s fail \$1" >>"$BATS_TEST_TMPDIR/log"
	exit 1
fi
sleep 0.1
echo "\$s \$(ms) ok \$1" >>"$BATS_TEST_TMPDIR/log"
JOB
	chmod +x "$BATS_TEST_TMPDIR/job"
}

# The clock is skewed by preloading libfaketime rather than with the
# faketime(1) wrapper: the wrapper names a POSIX semaphore after its own
# pid with O_EXCL and exits 1 when a killed wrapper left one behind,
# which the reused pids of a busy machine do meet.  The library loaded
# into timeout(1), which exits normally, shares its clock with every
# process below it (FAKETIME_SHARED) and removes that memory at exit.
file_setup() {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[[ -e $lib ]] && break
	done
	[[ -e $lib ]] || {
		echo "libfaketime.so.1 not found (apt-get install faketime)" >&2
		return 1
	}
	export FAKETIME_LIB=$lib
}

# host SKEW: a loop that runs the job every quarter second (with a
# jitter), redlock under a clock skewed by SKEW, until the file stop
# exists.  A run that fails leaves its status in errors and what it
# said in stderr.
host() {
	bg_start "host$1" env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="$1" \
	    timeout 120 /bin/sh -c '
		i=0
		while [ ! -e "$1/stop" ] && [ $i -lt 400 ]; do
			redlock -n -q -E 0 -t 2s --once-per 1500ms \
			    job "$1/job" "$2" 2>>"$1/stderr" ||
			    echo "status $?" >>"$1/errors"
			sleep 0.2$(($$ % 7))
			i=$((i + 1))
		done' host "$BATS_TEST_TMPDIR" "$1"
}

server_past() { (($(server_ms) >= $1)); }

@test "three hosts with clocks 90 s apart run a job every tick: one success per period, a failure retried in its period" {
	write_job
	local start first last fail_at d=$BATS_TEST_TMPDIR
	start=$(server_ms)
	first=$((start / PERIOD_MS + 1))
	last=$((first + 11))
	host -90s
	host +0s
	host +90s
	# A failure at the start of the fourth full period.
	wait_until -t 20 server_past $(((first + 3) * PERIOD_MS))
	: >"$d/fail"
	wait_until -t 30 server_past $(((last + 1) * PERIOD_MS))
	: >"$d/stop"
	bg_wait host-90s 10
	bg_wait host+0s 10
	bg_wait host+90s 10
	# The one failure injected is the only one.
	[[ $(cat "$d/errors") == "status 1" ]] ||
		fail "redlock failed otherwise: $(cat "$d/errors" "$d/stderr")"
	[[ -e $d/failed ]] || fail "the failure was never injected"
	# No clock locks the others out: the successes came from more than
	# one host.  (Which host's tick comes first in a period is chance:
	# that each of the three wins one of twelve periods is not certain.)
	(($(awk '$3 == "ok" { print $4 }' "$d/log" | sort -u | wc -l) >= 2)) ||
		fail "one host ran every success: $(cat "$d/log")"
	# Exactly one success per full period, the one in which its run got
	# the lock: by when the job started, right after (a job that started
	# within 100 ms of a period's start, in a[k], may have got the lock
	# in the period before).
	run awk -v p=$PERIOD_MS -v first=$first -v last=$last '
		$3 == "ok" { if ($1 % p < 100) a[int($1 / p)]++; else n[int($1 / p)]++ }
		$2 == "fail" { f = int($1 / p); ft = $1 }
		$3 == "ok" && f != "" && int($1 / p) == f && $1 > ft { retried = 1 }
		END {
			for (k = first; k <= last; k++) {
				if (n[k] > 1) { print "period " k ": " n[k] " successes"; bad = 1 }
				if (n[k] + a[k] + a[k + 1] == 0) { print "period " k ": no success"; bad = 1 }
			}
			if (!retried) { print "the failure in period " f " was not retried in it"; bad = 1 }
			exit bad
		}' "$d/log"
	assert_success
}

@test "a success closes the period in which its run got the lock, not the one in which its job ended" {
	# Period 4 s: each run gets the lock 2.5 s into a period, and its
	# 2 s job ends in the next one, which must stay open for the next
	# run.  (1.5 s of slack for a run to get the lock in its period on
	# a busy machine; the next run comes 0.5 s after the job's end at
	# the earliest.)
	local p=4000 k i
	k=$(($(server_ms) / p + 1))
	for i in 0 1 2; do
		wait_until -t 10 server_past $(((k + i) * p + 2500))
		run -0 --separate-stderr redlock -n -t 5s --once-per 4s ended \
			sh -c 'sleep 2; echo ran'
		assert_output ran
	done
	# The last success marks its own period, which is over: no mark
	# is left for the period in which it ended.
	run -0 --separate-stderr redlock -n --once-per 4s ended echo again
	assert_output again
}

@test "a run in a period that had a success skips its command with the conflict status, saying so under -v" {
	run -0 redlock --once-per 1h daily true
	run -3 --separate-stderr redlock -E 3 --once-per 1h daily echo ran
	refute_output
	assert_equal "$stderr" ""
	run -3 --separate-stderr redlock -v -E 3 --once-per 1h daily echo ran
	refute_output
	[[ $stderr == *"already run successfully"*"skipping the command"* ]] ||
		fail "no skip message under -v: $stderr"
	# The skip gave the lock back at once.
	run -0 redlock -n daily true
}

@test "a failed run leaves the period open; only a success is recorded" {
	run -1 redlock --once-per 1h daily false
	run -0 --separate-stderr redlock --once-per 1h daily echo ran
	assert_output ran
	run -1 redlock --once-per 1h daily echo again
	refute_output
}

# mark CMD: CMD on the success mark of the lock "mark" (redis-cli reads
# the NUL byte of its name from a quoted line).
mark() { printf '%s "{redlock:mark}\\x00done"\n' "$1" | rcli; }
mark_gone() { [[ $(mark EXISTS) == 0 ]]; }

@test "the success mark shares the lock's slot, expires with its period, and is written only at a successful release" {
	# (A 4 s period: the run and the look at the mark take well under
	# that even on a machine busy with the files beside this one.)
	run -0 redlock -t 5s --once-per 4s mark sh -c \
		'[ "$(printf "EXISTS \"{redlock:mark}\\\\x00done\"\n" | redis-cli -s "$1")" = 0 ]' sh "$REDIS_SOCK"
	local ttl
	ttl=$(mark PTTL)
	((ttl > 0 && ttl <= 4000)) || fail "the mark's TTL is $ttl, not within the 4 s period"
	wait_until -t 8 mark_gone
	run -1 redlock --once-per 2s mark false
	assert mark_gone
}

@test "REDLOCK_ONCE_PER sets --once-per; 0 and a bad DURATION are usage errors; -s is refused" {
	run -0 redlock --once-per 1h envjob true
	REDLOCK_ONCE_PER=1h run -1 redlock envjob true
	run --separate-stderr redlock --once-per 0 envjob true
	assert_usage_error
	REDLOCK_ONCE_PER=soon run --separate-stderr redlock envjob true
	assert_usage_error
	[[ ${stderr_lines[0]} == *REDLOCK_ONCE_PER* ]]
	run --separate-stderr redlock -s --once-per 1h envjob true
	assert_usage_error
	assert_equal "${stderr_lines[0]}" "redlock: --once-per needs an exclusive lock, not -s or --limit"
	# The message names what the user gave.
	REDLOCK_ONCE_PER=1h run --separate-stderr redlock --limit 2 envjob true
	assert_usage_error
	assert_equal "${stderr_lines[0]}" "redlock: REDLOCK_ONCE_PER needs an exclusive lock, not -s or --limit"
	REDLOCK_LIMIT=2 run -64 --separate-stderr redlock --once-per 1h job true
	assert_equal "${stderr_lines[0]}" "redlock: --once-per needs an exclusive lock, not -s or --limit (REDLOCK_LIMIT is set)"
}

@test "--min-hold keeps working beside --once-per" {
	run -0 redlock --min-hold 1s --once-per 1h held true
	run -1 redlock -n held true
	run -1 redlock -w 2s --once-per 1h held true
}

@test "a run ended by redlock stop is no success, even when its command exits 0: the period stays open" {
	local d=$BATS_TEST_TMPDIR
	bg_start old redlock -t 3s --once-per 1h stopjob \
		/bin/sh -c '. "$TESTS_DIR/lib/await.sh"; trap "exit 0" TERM
		: >"$1"; await_file "$1.never"' sh "$d/old.held"
	wait_for_file "$d/old.held" 20
	run -0 redlock stop -w 20s stopjob
	bg_wait old 20
	assert_equal "$BG_STATUS" 0
	run -0 --separate-stderr redlock -n --once-per 1h stopjob echo next
	assert_output next
}

@test "a re-entrant run's success closes its period: a second inner run skips, and so does a later run of its own" {
	run -0 --separate-stderr redlock reent sh -c '
		redlock -E 0 --once-per 1h reent echo first
		redlock -E 0 --once-per 1h reent echo second'
	assert_output first
	run -1 --separate-stderr redlock --once-per 1h reent echo later
	refute_output
	# A failed inner run leaves the period open.
	run -0 --separate-stderr redlock reent2 sh -c '
		redlock --once-per 1h reent2 false
		redlock --once-per 1h reent2 echo retried'
	assert_output retried
}
