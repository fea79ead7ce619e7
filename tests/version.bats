#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The version: named once, by the Makefile's VERSION; debian/changelog's
# newest entry (and so the .deb's name) and NEWS's newest entry follow
# it, and `redlock --version` says it, with +git.N.HASH for a build of a
# later commit (tools/version.sh).  No server is needed.

load helpers

lifecycle # no server

# makefile_version: the Makefile's VERSION.
makefile_version() {
	sed -n 's/^VERSION *= *//p' "$REPO_DIR/Makefile"
}

@test "debian/changelog's newest version and NEWS's newest entry are the Makefile's VERSION" {
	local v
	v=$(makefile_version)
	[[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "the Makefile's VERSION is '$v'"
	run -0 sed -n '1s/^redlock (\([^)]*\)) .*/\1/p' "$REPO_DIR/debian/changelog"
	assert_output "$v"
	run -0 sed -n 's/^\* Version \([^ ]*\) .*/\1/p' "$REPO_DIR/NEWS"
	assert_line --index 0 "$v"
	# Newest first, each version once.
	local -a versions=("${lines[@]}")
	run -0 sh -c 'printf "%s\n" "$@" | sort -t. -k1,1nr -k2,2nr -k3,3nr -u' sh "${versions[@]}"
	assert_equal "$output" "$(printf '%s\n' "${versions[@]}")"
}

@test "redlock --version says the Makefile's VERSION, and +git.N.HASH for a build after it" {
	local v
	v=$(makefile_version)
	run -0 --separate-stderr redlock --version
	assert_equal "$stderr" ''
	assert_output --regexp "^redlock ${v//./\\.}(\+git\.[0-9]+\.[0-9a-f]{12}(\.dirty)?)?\$"
}

# scratch_repo DIR VERSION: a git checkout in DIR holding tools/version.sh
# and a Makefile whose VERSION is VERSION, committed.
scratch_repo() {
	mkdir -p "$1/tools"
	cp "$REPO_DIR/tools/version.sh" "$1/tools/"
	printf 'VERSION   = %s\nall:\n' "$2" >"$1/Makefile"
	git -C "$1" init -q
	commit_all "$1" "version $2"
}

# commit_all DIR MESSAGE: commit every file of DIR.
commit_all() {
	git -C "$1" add -A
	git -C "$1" -c user.name=test -c user.email=test@example.invalid \
		commit -q -m "$2"
}

@test "tools/version.sh: the release commit says VERSION, a later one +git.N.HASH, changes .dirty, a copy without git VERSION" {
	command -v git >/dev/null || skip "git is not installed"
	local r=$BATS_TEST_TMPDIR/repo
	scratch_repo "$r" 1.2.3
	run -0 "$r/tools/version.sh"
	assert_output 1.2.3
	echo a >"$r/file"
	commit_all "$r" a
	echo b >"$r/file"
	commit_all "$r" b
	local head
	head=$(git -C "$r" rev-parse HEAD)
	run -0 "$r/tools/version.sh"
	assert_output "1.2.3+git.2.${head:0:12}"
	echo c >"$r/file"
	run -0 "$r/tools/version.sh"
	assert_output "1.2.3+git.2.${head:0:12}.dirty"
	# The next release: the commit that sets VERSION.
	sed -i 's/^VERSION .*/VERSION   = 1.3.0/' "$r/Makefile"
	commit_all "$r" "version 1.3.0"
	run -0 "$r/tools/version.sh"
	assert_output 1.3.0
	# A copy of the tree inside the checkout, as make deb makes under
	# build/deb: no history of its own.
	mkdir -p "$r/build/copy"
	cp -r "$r/tools" "$r/Makefile" "$r/build/copy/"
	echo d >>"$r/file"
	run -0 "$r/build/copy/tools/version.sh"
	assert_output 1.3.0
}
