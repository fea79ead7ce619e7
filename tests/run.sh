#!/usr/bin/env bash
#
# Runs redlock's test suite: every tests/*.bats file (bats-core, TAP) and,
# if it has been built, the C unit test binary tests/unit (also TAP).
# Ends with one line "N passed, N failed"; exits non-zero if any failed.
#
# Usage: tests/run.sh [FILTER]
#   FILTER           only bats tests whose name matches this regex
#                    (bats --filter); the unit tests are run regardless
# Environment:
#   REDLOCK          the binary under test (default: ./redlock in the repo)
#   REDLOCK_WRAPPER  command put in front of every redlock invocation,
#                    e.g. 'valgrind -q --error-exitcode=99'
#   REDLOCK_TEST_SLOW  multiplier for the tests' timeouts (default 1, or 5
#                    when REDLOCK_WRAPPER is set)
#   BATS             the bats executable (default: bats)
#   REDLOCK_TESTS    only these bats files (names in tests/, separated by
#                    spaces, e.g. "cli.bats tls.bats"); default: all

set -u

tests_dir=$(cd "$(dirname "$0")" && pwd)
repo_dir=$(cd "$tests_dir/.." && pwd)

REDLOCK=${REDLOCK:-$repo_dir/redlock}
case $REDLOCK in
/*) ;;
*) REDLOCK=$PWD/$REDLOCK ;;
esac
export REDLOCK
export REDLOCK_WRAPPER=${REDLOCK_WRAPPER:-}

bats=${BATS:-bats}
filter=${1:-}

if [[ ! -x $REDLOCK ]]; then
	echo "# warning: $REDLOCK is not an executable file (run make?)" >&2
fi

log=$(mktemp "${TMPDIR:-/tmp}/redlock-tests.XXXXXX")
trap 'rm -f "$log"' EXIT

extra_failures=0

# Counts "ok N" / "not ok N" lines of the TAP stream in $log.
count() {
	grep -cE "^$1 [0-9]+" "$log"
}

shopt -s nullglob
bats_files=("$tests_dir"/*.bats)
shopt -u nullglob
if [[ -n ${REDLOCK_TESTS:-} ]]; then
	bats_files=()
	for f in $REDLOCK_TESTS; do
		bats_files+=("$tests_dir/$f")
	done
fi

if ((${#bats_files[@]})); then
	args=(--tap)
	[[ -n $filter ]] && args+=(--filter "$filter")
	"$bats" "${args[@]}" "${bats_files[@]}" 2>&1 | tee -a "$log"
	bats_status=${PIPESTATUS[0]}
	if ((bats_status != 0)) && ! grep -qE '^not ok [0-9]+' "$log"; then
		# bats failed without reporting a failing test (a crash, a bad
		# file): count it, so the run cannot pass.
		echo "# bats exited $bats_status without a failing test" | tee -a "$log"
		extra_failures=$((extra_failures + 1))
	fi
fi

if [[ -x $tests_dir/unit ]]; then
	before_not_ok=$(count 'not ok')
	"$tests_dir/unit" 2>&1 | tee -a "$log"
	unit_status=${PIPESTATUS[0]}
	if ((unit_status != 0)) && (($(count 'not ok') == before_not_ok)); then
		echo "# tests/unit exited $unit_status without a failing test" | tee -a "$log"
		extra_failures=$((extra_failures + 1))
	fi
fi

passed=$(count ok)
failed=$(($(count 'not ok') + extra_failures))
echo "$passed passed, $failed failed"
((failed == 0))
