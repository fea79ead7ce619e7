#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# One list of the Debian packages (tools/packages.txt, read by
# tools/packages.sh): debian/control's Build-Depends and the
# autopkgtest's Depends are its build and test purposes, and the
# Makefile and CI install through it rather than naming packages of
# their own.  No server is needed.

load helpers

PKGS=$REPO_DIR/tools/packages.sh

# relation_names FILE FIELD [PROFILE]: the package names of FIELD (a
# relation field of a deb822 file, continuation lines included), one a
# line, sorted; only those restricted to <PROFILE> when PROFILE is
# given, else only the unrestricted ones.  Versions are dropped.
relation_names() {
	awk -v field="$2" '
		/^[^ \t#]/ { on = (index($0, field ":") == 1) }
		on { sub("^" field ":", ""); print }' "$1" |
		tr ',' '\n' |
		awk -v prof="${3:-}" '
			NF == 0 { next }
			{ r = ""; if (match($0, /<[^>]*>/)) r = substr($0, RSTART + 1, RLENGTH - 2) }
			r == prof { print $1 }' |
		sort
}

# purpose_names PURPOSE...: tools/packages.sh's packages, one a line, sorted.
purpose_names() {
	"$PKGS" "$@" | tr ' ' '\n' | sort
}

@test "debian/control's Build-Depends are the list's build packages, the test packages under <!nocheck>, and debhelper's compat level" {
	local control=$REPO_DIR/debian/control
	run -0 relation_names "$control" Build-Depends
	local plain=$output
	run -0 purpose_names build
	# build-essential (toolchain) is implied by Debian Policy 4.2 and
	# debhelper-compat is debhelper's (the deb purpose).
	assert_equal "$(grep -vx debhelper-compat <<<"$plain")" "$output"
	grep -qx debhelper-compat <<<"$plain"
	run -0 "$PKGS" deb
	assert_output --regexp '(^| )debhelper( |$)'
	run -0 relation_names "$control" Build-Depends '!nocheck'
	local nocheck=$output
	run -0 purpose_names test
	assert_equal "$nocheck" "$output"
}

@test "the autopkgtest depends on the package and the list's test packages" {
	local control=$REPO_DIR/debian/tests/control
	[[ -f $control ]] || skip "no debian/tests/control"
	run -0 relation_names "$control" Depends
	local deps=$output
	assert_line @
	run -0 purpose_names test
	assert_equal "$(grep -vx @ <<<"$deps")" "$output"
}

@test "the Makefile and CI install packages only through tools/packages.sh, CI all its steps need" {
	# No line that mentions apt-get names a package itself.
	local line pkg
	while IFS= read -r line; do
		for pkg in $("$PKGS"); do
			[[ " ${line//[^a-z0-9.+-]/ } " != *" $pkg "* ]] ||
				fail "names $pkg: $line"
		done
	done < <(grep -h 'apt-get' "$REPO_DIR/Makefile" "$REPO_DIR/.ci/run")
	run -0 sed -n 's/^purposes="\(.*\)"$/\1/p' "$REPO_DIR/.ci/run"
	local -a purposes
	read -r -a purposes <<<"$output"
	run -0 "$PKGS" "${purposes[@]}"
	# One package of each thing CI runs: the build, the suite, the test
	# against an earlier build, lint, sanitize, fuzz, the package's checks
	# and the chaos harness.
	local p
	for p in build-essential libhiredis-dev redis-server git clang-tidy \
		libclang-rt-14-dev debootstrap iproute2 iptables procps; do
		assert_output --regexp "(^| )$p( |\$)"
	done
}

@test "tools/packages.sh: every purpose by default, each package once, an unknown purpose a usage error" {
	run -0 "$PKGS"
	assert_equal "${#lines[@]}" 1
	local all=$output
	run -0 sh -c 'tr " " "\n" | sort | uniq -d' <<<"$all"
	assert_output ''
	run -0 "$PKGS" --purposes
	assert_line toolchain
	assert_line test
	run -64 --separate-stderr "$PKGS" no-such-purpose
	assert_output ''
	assert_equal "${#stderr_lines[@]}" 2
	assert_regex "${stderr_lines[0]}" "no purpose 'no-such-purpose'"
	run -64 --separate-stderr "$PKGS" --install no-such-purpose
	assert_output ''
}
