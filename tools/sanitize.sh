#!/usr/bin/env bash
#
# sanitize.sh - run the test suite against sanitizer builds of redlock
# (`make sanitize`).  Each build goes to build/VARIANT/ through
# tools/build-variant.sh, so the normal build is left alone.
#
#   asan   AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer;
#          the C unit tests and the bats suite (tests/run.sh, its files
#          side by side as in make check) but three files of wall-clock
#          bounds (run_asan()).
#   tsan   ThreadSanitizer; the tests that exercise the renewal thread
#          and the signal plumbing (tests/renew.bats, tests/signals.bats,
#          tests/unavailable.bats: servers dying under a renewing holder;
#          tests/tls.bats: the renewal thread opening its own TLS
#          connections on the shared SSL_CTX).
#
# Usage: tools/sanitize.sh [asan] [tsan]      (default: both)
# Environment:
#   SAN_CC        compiler for the sanitizer builds (default: clang; gcc
#                 works too)
#   TSAN_TESTS    bats files for the tsan run, relative to tests/
#                 (default: "renew.bats signals.bats unavailable.bats tls.bats")
#   SAN_FILTER    a bats --filter regex for both runs (default: none)
#   REDLOCK_TEST_JOBS  files run at once (default: tests/run.sh's)
#
# A sanitizer report fails the run even when no test notices it: every
# report is written to build/VARIANT/reports/ (log_path=...), which must
# be empty at the end.  redlock forks twice (the command, which execs
# at once, and the guard, which ends with _exit): neither runs the leak
# check, so detect_leaks=1 only ever looks at redlock itself.  The
# command and the test harness (sh, redis-cli, python) are not
# instrumented, so the *SAN_OPTIONS they inherit do nothing there.
# Exits 0 when every test passed and no report was written.

set -u
cd "$(dirname "$0")/.." || exit 70
repo=$PWD
cc=${SAN_CC:-clang}
filter=${SAN_FILTER:-}
read -r -a tsan_tests <<<"${TSAN_TESTS:-renew.bats signals.bats unavailable.bats tls.bats}"

variants=("$@")
((${#variants[@]})) || variants=(asan tsan)

failed=0

# reports_clean DIR: 0 if DIR holds no report, else print them and 1.
reports_clean() {
	local dir=$1 f found=0
	for f in "$dir"/*; do
		[[ -f $f ]] || continue
		found=1
		echo "# ---- sanitizer report $f" >&2
		cat "$f" >&2
	done
	((found == 0))
}

run_asan() {
	local dir=$repo/build/asan/reports status=0
	CC=$cc CFLAGS='-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all' \
		LDFLAGS='-fsanitize=address,undefined' \
		tools/build-variant.sh asan || return 1
	rm -rf "$dir"
	mkdir -p "$dir"
	# allocator_release_to_os_interval_ms=-1: the allocator then never
	# reads the clock, which libfaketime (the tests of hosts with skewed
	# clocks preload it) answers by allocating, and the allocator would
	# wait on itself at the first malloc.
	export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:exitcode=86:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allocator_release_to_os_interval_ms=-1:log_path=$dir/asan"
	export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:exitcode=86:print_stacktrace=1:log_path=$dir/ubsan"
	export LSAN_OPTIONS="exitcode=86"
	# Every file but those whose assertions are wall-clock bounds that a
	# sanitized build beside five other files cannot keep (a standby's
	# takeover within a second, ticks of 1.5 s periods, a cluster's
	# failover within the lease): they run in make check.  Nor the
	# chaos harness (its checker admits a frozen holder's overlap only
	# within wall-clock windows) or the compatibility test (the other
	# build is not sanitized, and this one's paths are the other files'
	# own).
	local f
	local -a files=()
	for f in tests/*.bats; do
		case ${f##*/} in
		respawn.bats | once-per.bats | cluster.bats | chaos.bats | compat.bats) ;;
		*) files+=("$repo/$f") ;;
		esac
	done
	echo "# sanitize: asan: unit tests and bats suite with REDLOCK=build/asan/redlock"
	REDLOCK=$repo/build/asan/redlock REDLOCK_TEST_UNIT=$repo/build/asan/unit \
		REDLOCK_TEST_SLOW=${REDLOCK_TEST_SLOW:-2} \
		tests/run.sh "$filter" "${files[@]}" || status=1
	unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
	reports_clean "$dir" || {
		echo "# sanitize: asan: sanitizer reports above" >&2
		status=1
	}
	return "$status"
}

run_tsan() {
	local dir=$repo/build/tsan/reports status=0 f
	local -a files=()
	CC=$cc CFLAGS='-O1 -g -fno-omit-frame-pointer -fsanitize=thread' \
		LDFLAGS='-fsanitize=thread' \
		tools/build-variant.sh tsan || return 1
	rm -rf "$dir"
	mkdir -p "$dir"
	for f in "${tsan_tests[@]}"; do
		files+=("tests/$f")
	done
	export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$dir/tsan"
	echo "# sanitize: tsan: ${files[*]} with REDLOCK=build/tsan/redlock"
	REDLOCK=$repo/build/tsan/redlock REDLOCK_TEST_UNIT='' \
		REDLOCK_TEST_SLOW=${REDLOCK_TEST_SLOW:-3} tests/run.sh "$filter" "${files[@]}" ||
		status=1
	unset TSAN_OPTIONS
	reports_clean "$dir" || {
		echo "# sanitize: tsan: sanitizer reports above" >&2
		status=1
	}
	return "$status"
}

for v in "${variants[@]}"; do
	case $v in
	asan) run_asan || failed=1 ;;
	tsan) run_tsan || failed=1 ;;
	*)
		echo "usage: tools/sanitize.sh [asan] [tsan]" >&2
		exit 64
		;;
	esac
done
if ((failed)); then
	echo "# sanitize: FAILED"
	exit 1
fi
echo "# sanitize: passed (${variants[*]}), no sanitizer reports"
