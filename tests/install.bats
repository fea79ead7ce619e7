#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# make install / make uninstall into a DESTDIR (SPEC §7): every file where
# a distribution package puts it.

load helpers

@test "make install puts the binary, man page and three completions under DESTDIR" {
	local dest=$BATS_TEST_TMPDIR/stage
	run -0 make -s -C "$REPO_DIR" install PREFIX=/usr DESTDIR="$dest"
	assert [ -x "$dest/usr/bin/redlock" ]
	assert [ -f "$dest/usr/share/man/man1/redlock.1" ]
	assert [ -f "$dest/usr/share/bash-completion/completions/redlock" ]
	assert [ -f "$dest/usr/share/zsh/site-functions/_redlock" ]
	assert [ -f "$dest/usr/share/fish/vendor_completions.d/redlock.fish" ]
	run -0 "$dest/usr/bin/redlock" --version
	assert_output --regexp '^redlock [0-9]'
	# Nothing else, and nothing outside DESTDIR/PREFIX.
	run -0 sh -c "cd '$dest' && find . -type f | sort"
	assert_equal "${#lines[@]}" 5
	run -0 make -s -C "$REPO_DIR" uninstall PREFIX=/usr DESTDIR="$dest"
	run -0 sh -c "cd '$dest' && find . -type f | wc -l"
	assert_output 0
}

@test "make install honours PREFIX" {
	local dest=$BATS_TEST_TMPDIR/stage
	run -0 make -s -C "$REPO_DIR" install PREFIX=/opt/rl DESTDIR="$dest"
	assert [ -x "$dest/opt/rl/bin/redlock" ]
	assert [ -f "$dest/opt/rl/share/man/man1/redlock.1" ]
}
