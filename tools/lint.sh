#!/usr/bin/env bash
#
# lint.sh - static checks of everything the repository ships (`make lint`):
#
#   - cc: src/ builds with gcc and with clang at -O2 -Wall -Wextra -Werror
#     (tools/build-variant.sh, into build/lint-*/), and fuzz/*.c compiles
#     warning-free with both, as do the test tools tests/tools/*.c
#   - cppcheck: src/*.c, tests/unit.c, tests/tools/*.c, fuzz/*.c
#   - clang-tidy: the same files, with the checks of tools/clang-tidy.yaml
#   - shellcheck: tests/*.bats, tests/*.bash, completions/redlock.bash (as
#     bash), tests/*.sh, tests/package/*.sh, bench/*.sh, bench/tools/*
#     (the shell scripts), tools/*.sh, .ci/run, debian/tests/suite
#   - mandoc: mandoc -Tlint on man/redlock.1 and the pages of section 7,
#     run in man/ so that their references to one another are found
#   - lua: src/scripts.c is what tools/luagen.sh makes of src/lua/, and
#     luacheck (.luacheckrc) finds nothing in any script as assembled
#     (into build/lua/), the text the servers run, nor in any file of
#     src/lua/ alone (tools/luagen.sh check)
#   - options: tests/check-options.sh (--help, man page and completions
#     agree), against the binary built by the cc step
#   - completions: zsh -n and fish -n on the zsh and fish completions
#     (where zsh and fish are installed)
#   - rules: promtool check rules and promtool test rules on the
#     Prometheus alerting rules (monitoring/)
#   - shape: no src/*.c over 600 lines, no function over 80 lines (the
#     sizes at which a file or a function stops being read at once);
#     src/scripts.c, generated, is left out
#
# Usage: tools/lint.sh [STEP...]            (default: every step)
# Every step runs even when an earlier one failed; a step whose tool is
# missing fails (`make lint` installs them first: tools/packages.sh lint).
# Exits 0 when every step found nothing, 1 otherwise.

set -u
cd "$(dirname "$0")/.." || exit 70

all_steps=(cc cppcheck clang-tidy shellcheck mandoc lua options completions rules shape)
steps=("$@")
((${#steps[@]})) || steps=("${all_steps[@]}")

read -r -a pkg_cflags <<<"$(pkg-config --cflags hiredis uuid 2>/dev/null)"
# What the Makefile compiles with (minus the version, which main.c has
# a default for), for the analyzers.
cflags=(-std=c11 -D_GNU_SOURCE -pthread -Isrc "${pkg_cflags[@]}")
shopt -s nullglob
c_files=(src/*.c tests/unit.c tests/tools/*.c fuzz/*.c)
shopt -u nullglob

need() {
	command -v "$1" >/dev/null && return 0
	echo "lint: $1 is not installed (Debian: tools/packages.sh lint)" >&2
	return 1
}

step_cc() {
	local cc status=0
	for cc in gcc clang; do
		need "$cc" || {
			status=1
			continue
		}
		CC=$cc CFLAGS='-O2 -g -Werror' tools/build-variant.sh "lint-$cc" \
			>/dev/null || status=1
		"$cc" "${cflags[@]}" -Wall -Wextra -Werror -fsyntax-only fuzz/*.c tests/tools/*.c ||
			status=1
	done
	return "$status"
}

step_cppcheck() {
	need cppcheck || return 1
	# variableScope is off: it asks for declarations in the innermost
	# block, where the house style (OpenBSD style(9), see STYLE.md)
	# declares at the top of the function.
	cppcheck --enable=warning,style,performance,portability \
		--error-exitcode=1 --inline-suppr --suppress=missingIncludeSystem \
		--suppress=variableScope --std=c11 -D_GNU_SOURCE -Isrc --quiet \
		--template='{file}:{line}: {severity}: {message} [{id}]' \
		"${c_files[@]}" 2>&1
}

step_clang-tidy() {
	local log=build/lint/clang-tidy.log status=0
	need clang-tidy || return 1
	mkdir -p build/lint
	[[ -f build/.gitignore ]] || echo '*' >build/.gitignore
	clang-tidy --quiet --config-file=tools/clang-tidy.yaml "${c_files[@]}" \
		-- "${cflags[@]}" >"$log" 2>&1 || status=1
	# One line a finding; the analyzer's paths are in the log.
	grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' "$log" |
		sed -e "s|^$PWD/||" -e 's/,-warnings-as-errors\]$/]/'
	((status == 0)) || echo "lint: clang-tidy: the full report is in $log"
	return "$status"
}

step_shellcheck() {
	local f status=0
	local -a as_bash=() by_shebang=()
	need shellcheck || return 1
	shopt -s nullglob
	# bats files are bash with @test blocks, which shellcheck understands.
	as_bash=(tests/*.bats tests/*.bash completions/redlock.bash)
	by_shebang=(tests/*.sh tests/lib/*.sh tests/chaos/*.sh tests/package/*.sh bench/*.sh \
		tools/*.sh .ci/run debian/tests/suite)
	for f in bench/tools/*; do
		[[ -f $f ]] && head -n 1 "$f" | grep -qE '^#!.*/(env )?(ba)?sh\b' &&
			by_shebang+=("$f")
	done
	shopt -u nullglob
	shellcheck -s bash "${as_bash[@]}" || status=1
	shellcheck "${by_shebang[@]}" || status=1
	return "$status"
}

step_mandoc() {
	local out status=0
	need mandoc || return 1
	# In man/, since mandoc looks for a page that .Xr names in the current
	# directory too: redlock(1) and redlock-protocol(7) are not installed.
	out=$(cd man && mandoc -Tlint redlock.1 ./*.7 2>&1) || status=$?
	# "outdated mandoc.db lacks X(1) entry" is about this host's man
	# database, not the pages: mandoc falls back to the file system and
	# still reports a page that is missing ("referenced manual not found").
	grep -v 'outdated mandoc.db lacks' <<<"$out" | grep . >&2
	return "$status"
}

step_lua() {
	local out=build/lua status=0
	need luacheck || return 1
	mkdir -p build
	[[ -f build/.gitignore ]] || echo '*' >build/.gitignore
	rm -rf "$out"
	tools/luagen.sh lua "$out" || return 1
	if ! tools/luagen.sh c | cmp -s - src/scripts.c; then
		echo "lint: src/scripts.c is not what tools/luagen.sh makes" \
			"of src/lua/: run make and commit it" >&2
		status=1
	fi
	if ! tools/luagen.sh h | cmp -s - src/script_args.h; then
		echo "lint: src/script_args.h is not what tools/luagen.sh" \
			"makes of src/lua/: run make and commit it" >&2
		status=1
	fi
	luacheck --quiet --codes --formatter plain "$out"/*.lua || status=1
	tools/luagen.sh check || status=1
	return "$status"
}

step_options() {
	local bin=build/lint-gcc/redlock
	if [[ ! -x tests/check-options.sh ]]; then
		echo "lint: tests/check-options.sh is missing" >&2
		return 1
	fi
	[[ -x $bin ]] || bin=${REDLOCK:-./redlock}
	REDLOCK=$PWD/${bin#./} tests/check-options.sh
}

step_completions() {
	local status=0
	if command -v zsh >/dev/null; then
		zsh -n completions/_redlock || status=1
	else
		echo "lint: zsh not installed; completions/_redlock not checked" >&2
	fi
	if command -v fish >/dev/null; then
		fish -n completions/redlock.fish || status=1
	else
		echo "lint: fish not installed; completions/redlock.fish not checked" >&2
	fi
	return "$status"
}

step_rules() {
	need promtool || return 1
	promtool check rules monitoring/redlock.rules.yml &&
		promtool test rules monitoring/redlock.rules.test.yml
}

# A function starts at a line "name(" in column 0 (the style puts the
# return type on the line above) and ends at the next "}" in column 0.
step_shape() {
	local status=0 f
	for f in src/*.c; do
		# Generated from src/lua/, whose files are the ones read.
		[[ $f == src/scripts.c ]] && continue
		if (($(wc -l <"$f") > 600)); then
			echo "lint: $f has $(wc -l <"$f") lines (at most 600)" >&2
			status=1
		fi
		awk -v f="$f" '
			/^[a-z_][a-z0-9_]*\(/ { name = $0; start = NR }
			/^}/ && start { if (NR - start + 2 > 80)
				printf "lint: %s: %s is %d lines (at most 80)\n",
				    f, substr(name, 1, index(name, "(") - 1),
				    NR - start + 2 > "/dev/stderr"; start = 0 }
		' "$f"
		awk '/^[a-z_][a-z0-9_]*\(/ { s = NR } /^}/ && s { if (NR - s + 2 > 80) bad = 1; s = 0 }
			END { exit bad }' "$f" || status=1
	done
	return "$status"
}

failed=()
for s in "${steps[@]}"; do
	if ! declare -F "step_$s" >/dev/null; then
		echo "usage: tools/lint.sh [${all_steps[*]}]" >&2
		exit 64
	fi
	echo "# lint: $s"
	if "step_$s"; then
		echo "# lint: $s: ok"
	else
		echo "# lint: $s: FAILED"
		failed+=("$s")
	fi
done
if ((${#failed[@]})); then
	echo "# lint: FAILED: ${failed[*]}"
	exit 1
fi
echo "# lint: passed (${steps[*]})"
