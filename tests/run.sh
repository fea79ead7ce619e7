#!/usr/bin/env bash
#
# Runs redlock's test suite: every tests/*.bats file (bats-core, TAP) and,
# if it has been built, the C unit test binary tests/unit (also TAP).
# The files are independent (each starts its own servers, in a directory
# and on ports of its own), so they run side by side, the longest first
# (any that would have to run alone last: ALONE below);
# each file's TAP is printed whole when that file ends, under a "# ----"
# header line with its time.  Ends with one line "N passed, N failed"
# counting every test of every file; exits non-zero if any test failed
# or a file ended without reporting all the tests it planned.
#
# Usage: tests/run.sh [FILTER [FILE...]]
#   FILTER           only bats tests whose name matches this regex
#                    (bats --filter; '' for all); the unit tests are run
#                    regardless
#   FILE...          these bats files only (default: tests/*.bats)
# Environment:
#   REDLOCK          the binary under test (default: ./redlock in the repo)
#   REDLOCK_WRAPPER  command put in front of every redlock invocation,
#                    e.g. 'valgrind -q --error-exitcode=99'
#   REDLOCK_TEST_SLOW  multiplier for the tests' timeouts (default 1, or 5
#                    when REDLOCK_WRAPPER is set)
#   REDLOCK_TEST_UNIT  the unit test binary (default: tests/unit, when
#                    built; empty: none)
#   REDLOCK_TEST_JOBS  how many files run at once (default: JOBS_PER_CPU
#                    per processor, below); 1 runs them one after another
#   REDLOCK_TEST_RECORD  set to 1 to rewrite tests/durations with this
#                    run's times (after a full, passing run)
#   REDLOCK_TEST_REAL_CLI  set to 1 to run the real redis-cli everywhere
#                    rather than the suite's tests/tools/rcli (see
#                    tests/helpers.bash, _use_rcli)
#   REDLOCK_TEST_REDIS_CLI  the real redis-cli (default: the one on PATH)
#   BATS             the bats executable (default: bats)
#   REDLOCK_TESTS    only these bats files (names in tests/, separated by
#                    spaces, e.g. "cli.bats tls.bats"); default: all

set -u

tests_dir=$(cd "$(dirname "$0")" && pwd)
repo_dir=$(cd "$tests_dir/.." && pwd)

# The files wait (for servers, leases, timeouts) as much as they compute:
# on 2 processors, 6 at once left them idle for a third of a quiet run,
# and with a CPU hog beside the suite took 254 s where 8 took 227.  The
# tests that time a reconnection or a keystroke, once flaky at 8, have
# room for the files beside them since.
JOBS_PER_CPU=4

# Files that must run last, alone, because the files beside them would
# be what they measure.  None today: the millisecond figures are
# checked by bench/wait-precision.sh, and every bound in the suite
# leaves room for the files beside it (a bound that does not belongs in
# bench/, or gets room with a sentence of why).
ALONE=()

REDLOCK=${REDLOCK:-$repo_dir/redlock}
case $REDLOCK in
/*) ;;
*) REDLOCK=$PWD/$REDLOCK ;;
esac
export REDLOCK
export REDLOCK_WRAPPER=${REDLOCK_WRAPPER:-}

bats=${BATS:-bats}
filter=${1:-}
shift $(($# > 0 ? 1 : 0))
jobs=${REDLOCK_TEST_JOBS:-$(($(nproc 2>/dev/null || echo 2) * JOBS_PER_CPU))}
((jobs >= 1)) || jobs=1

if [[ ! -x $REDLOCK ]]; then
	echo "# warning: $REDLOCK is not an executable file (run make?)" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-tests.XXXXXX") || exit 70
# The ports every file of this run has taken (see free_port in
# tests/helpers.bash): one directory for all, so that no two files are
# ever handed the same port.
export REDLOCK_TEST_PORTS=$work/ports
mkdir -p "$REDLOCK_TEST_PORTS"

declare -A job_of=() # pid -> job name

# stop_jobs: on an interrupt, SIGINT to every running file's session (bats
# then runs the files' teardowns, which stop their servers), and SIGKILL
# to the sessions still there 10 s later.
stop_jobs() {
	local pid f i left
	local -a sids=()
	for pid in "${!job_of[@]}"; do
		f=$work/${job_of[$pid]##*/}.sid
		[[ -s $f ]] && sids+=("$(<"$f")")
	done
	((${#sids[@]})) || return 0
	for i in "${sids[@]}"; do
		kill -INT -- "-$i" 2>/dev/null
	done
	for ((i = 0; i < 100; i++)); do
		left=0
		for pid in "${sids[@]}"; do
			kill -0 -- "-$pid" 2>/dev/null && left=1
		done
		((left)) || return 0
		sleep 0.1
	done
	for pid in "${sids[@]}"; do
		kill -KILL -- "-$pid" 2>/dev/null
	done
}
trap 'stop_jobs; rm -rf "$work"' EXIT
trap 'echo "# interrupted" >&2; exit 130' INT TERM

# --- what to run, longest first ----------------------------------------------

if (($#)); then
	bats_files=("$@")
elif [[ -n ${REDLOCK_TESTS:-} ]]; then
	bats_files=()
	for f in $REDLOCK_TESTS; do
		bats_files+=("$tests_dir/$f")
	done
else
	shopt -s nullglob
	bats_files=("$tests_dir"/*.bats)
	shopt -u nullglob
fi

# ordered FILE...: the files, those tests/durations says take longest
# first; files it does not know go first (they may be long).
ordered() {
	local f base
	for f in "$@"; do
		base=${f##*/}
		awk -v f="$base" -v p="$f" '
			$2 == f { print $1, p; found = 1; exit }
			END { if (!found) print 1e9, p }' "$tests_dir/durations" 2>/dev/null ||
			echo "1e9 $f"
	done | sort -g -r -k1,1 | cut -d' ' -f2-
}
# alone FILE: FILE is one of ALONE.
alone() {
	local a
	for a in "${ALONE[@]}"; do
		[[ ${1##*/} == "$a" ]] && return 0
	done
	return 1
}
queue=()
later=()
while read -r f; do
	if alone "$f"; then later+=("$f"); else queue+=("$f"); fi
done < <(ordered "${bats_files[@]}")
unit_bin=${REDLOCK_TEST_UNIT-$tests_dir/unit}
[[ -n $unit_bin && -x $unit_bin ]] && queue+=(unit)
first_alone=${#queue[@]}
queue+=("${later[@]}")

# --- one job -------------------------------------------------------------------

# run_job NAME: runs one file (or the unit tests) to $work/NAME.tap,
# its status to NAME.rc and its wall time (s) to NAME.time.  bats runs
# in a session of its own (its id in NAME.sid, for stop_jobs), with
# SIGINT and SIGQUIT at their default: bash makes a background job
# ignore them, and the tests check what the caller's signals look like.
run_job() {
	local name=$1 out=$work/${1##*/} t0 rc=0 pid
	t0=$EPOCHREALTIME
	if [[ $name == unit ]]; then
		"$unit_bin" >"$out.tap" 2>&1 </dev/null || rc=$?
	else
		local -a args=(--tap)
		[[ -n $filter ]] && args+=(--filter "$filter")
		setsid env --default-signal=INT,QUIT "$bats" "${args[@]}" "$name" \
			>"$out.tap" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >"$out.sid"
		wait "$pid" || rc=$?
	fi
	echo "$rc" >"$out.rc"
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }' >"$out.time"
}

# --- reporting -------------------------------------------------------------------

passed=0
failed=0
declare -a times=()

# report NAME: prints the job's TAP and adds its counts; a job that
# exited non-zero without a failing test, or that reported fewer tests
# than its plan, counts as one more failure.
report() {
	local name=$1 out=$work/${1##*/} ok bad rc plan t
	ok=$(grep -cE '^ok [0-9]+' "$out.tap")
	bad=$(grep -cE '^not ok [0-9]+' "$out.tap")
	rc=$(cat "$out.rc")
	t=$(cat "$out.time")
	plan=$(sed -n -E '0,/^1\.\.([0-9]+)/s//\1/p' "$out.tap")
	echo "# ---- ${name#"$repo_dir"/}: $((ok + bad)) tests, ${t}s"
	cat "$out.tap"
	if ((rc != 0 && bad == 0)); then
		echo "# ${name#"$repo_dir"/} exited $rc without a failing test"
		bad=$((bad + 1))
	elif [[ -n $plan ]] && ((plan != ok + bad)); then
		echo "# ${name#"$repo_dir"/} planned $plan tests but reported $((ok + bad))"
		bad=$((bad + 1))
	fi
	passed=$((passed + ok))
	failed=$((failed + bad))
	times+=("$t ${name##*/}")
}

# --- the pool ----------------------------------------------------------------------

suite_t0=$EPOCHREALTIME
next=0
while ((next < ${#queue[@]} || ${#job_of[@]} > 0)); do
	while ((next < ${#queue[@]} && ${#job_of[@]} < (next < first_alone ? jobs : 1))); do
		run_job "${queue[next]}" &
		job_of[$!]=${queue[next]}
		next=$((next + 1))
	done
	done_pid=
	wait -n -p done_pid "${!job_of[@]}"
	[[ -n $done_pid && -n ${job_of[$done_pid]+x} ]] || continue
	report "${job_of[$done_pid]}"
	unset "job_of[$done_pid]"
done

elapsed=$(awk -v a="$suite_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
echo "# ${#queue[@]} files in ${elapsed}s, $jobs at a time"
if [[ ${REDLOCK_TEST_RECORD:-} == 1 ]] && ((failed == 0)) && [[ -z $filter ]] && (($# == 0)); then
	{
		echo "# Seconds each file took in a full run of tests/run.sh, which starts"
		echo "# the longest first.  REDLOCK_TEST_RECORD=1 tests/run.sh rewrites this."
		printf '%s\n' "${times[@]}" | grep -v ' unit$' | sort -g -r
	} >"$tests_dir/durations"
	echo "# wrote tests/durations"
fi
echo "$passed passed, $failed failed"
((failed == 0))
