#!/usr/bin/env bash
#
# fuzz.sh - build and run redlock's libFuzzer targets (`make fuzz`).
#
#   url        url_parse(), url_name(), url_redact()   fuzz/url_fuzzer.c
#   duration   duration_parse(), duration_format()     fuzz/duration_fuzzer.c
#   config     config_parse(): argv split on NUL bytes fuzz/config_fuzzer.c
#
# Usage: tools/fuzz.sh [TARGET...]            (default: all three)
# Environment:
#   FUZZ_SECONDS  how long to fuzz each target (default 60; CI uses ~20);
#                 0 only replays the corpus (a quick regression check)
#   FUZZ_CC       clang with libFuzzer (default: clang)
#   FUZZ_FLAGS    extra libFuzzer flags, e.g. '-jobs=2' or '-seed=1'
#
# Builds into build/fuzz/ (the src/ objects with fuzzer-no-link
# coverage, ASan and UBSan, in an archive so that each target links
# only what it needs, e.g. not main.c).  Seeds are read from
# fuzz/corpus/TARGET/ and never written; what libFuzzer finds goes to
# build/fuzz/corpus/TARGET/, a crashing input to
# build/fuzz/artifacts/TARGET/.  Replay one with
#     build/fuzz/TARGET-fuzzer FILE
# Exits 0 when no target crashed, leaked or timed out; otherwise prints
# each crashing input as a C string (for a unit test) and exits 1.

set -u
cd "$(dirname "$0")/.." || exit 70
seconds=${FUZZ_SECONDS:-60}
cc=${FUZZ_CC:-clang}
read -r -a extra <<<"${FUZZ_FLAGS:-}"
targets=("$@")
((${#targets[@]})) || targets=(url duration config)

out=build/fuzz
read -r -a pkg_cflags <<<"$(pkg-config --cflags hiredis uuid 2>/dev/null)"
read -r -a libs <<<"$(pkg-config --libs hiredis uuid 2>/dev/null || echo -lhiredis -luuid) -pthread"
cflags=(-g -O1 -fno-omit-frame-pointer '-fsanitize=address,undefined'
	-fno-sanitize-recover=undefined -std=c11 -D_GNU_SOURCE -pthread -Wall
	-Wextra -Isrc "${pkg_cflags[@]}")

build() {
	local src obj objs=()
	mkdir -p "$out/obj"
	[[ -f build/.gitignore ]] || echo '*' >build/.gitignore
	rm -f "$out"/obj/*.o "$out/libredlock.a"
	for src in src/*.c; do
		[[ $src == src/main.c ]] && continue
		obj=$out/obj/$(basename "$src" .c).o
		"$cc" "${cflags[@]}" -fsanitize=fuzzer-no-link -c -o "$obj" "$src" || return 1
		objs+=("$obj")
	done
	ar rcs "$out/libredlock.a" "${objs[@]}" || return 1
	for t in "${targets[@]}"; do
		if [[ ! -f fuzz/${t}_fuzzer.c ]]; then
			echo "fuzz.sh: no target '$t' (fuzz/${t}_fuzzer.c)" >&2
			return 1
		fi
		"$cc" "${cflags[@]}" -fsanitize=fuzzer -o "$out/$t-fuzzer" \
			"fuzz/${t}_fuzzer.c" "$out/libredlock.a" "${libs[@]}" || return 1
	done
}

# show_input FILE: the input as a C string literal.
show_input() {
	/usr/bin/python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
s = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else
            "\\%s" % {34: "\"", 92: "\\"}[c] if c in (34, 92) else
            "\\%03o" % c for c in b)
print("  input (%d bytes): \"%s\"" % (len(b), s))' "$1"
}

run_target() {
	local t=$1 status max_len=512 f
	local -a args=()
	mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
	rm -f "$out/artifacts/$t"/*
	[[ $t == config ]] && max_len=4096
	[[ -f fuzz/$t.dict ]] && args+=("-dict=fuzz/$t.dict")
	if ((seconds > 0)); then
		args+=("-max_total_time=$seconds")
	else
		args+=(-runs=0)
	fi
	echo "# fuzz: $t for ${seconds}s"
	"$out/$t-fuzzer" "${args[@]}" -max_len="$max_len" -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" \
		"${extra[@]}" "$out/corpus/$t" "fuzz/corpus/$t" \
		>"$out/$t.log" 2>&1
	status=$?
	grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|Done [0-9]+ runs)' \
		"$out/$t.log" | sed "s/^/# fuzz: $t: /"
	if ((status != 0)); then
		echo "# fuzz: $t FAILED (status $status); log: $out/$t.log"
		grep -E 'ERROR|runtime error|_fuzzer: |SUMMARY' "$out/$t.log" | head -n 5 | sed 's/^/#   /'
		for f in "$out/artifacts/$t"/*; do
			[[ -f $f ]] || continue
			echo "#   artifact $f"
			show_input "$f"
		done
		return 1
	fi
}

build || {
	echo "# fuzz: build failed"
	exit 1
}
failed=0
for t in "${targets[@]}"; do
	run_target "$t" || failed=1
done
if ((failed)); then
	echo "# fuzz: FAILED"
	exit 1
fi
echo "# fuzz: passed (${targets[*]}), ${seconds}s each"
