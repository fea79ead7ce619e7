#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# make install / make uninstall into a DESTDIR (README.md): every file where
# a distribution package puts it.  They test the source tree, so they skip
# when the suite runs against an installed redlock (the autopkgtest).

load helpers

setup() {
	if ! [[ ${REDLOCK:-$REPO_DIR/redlock} -ef $REPO_DIR/redlock ]]; then
		skip "tests the source tree's make install, not $REDLOCK"
	fi
}

@test "make install puts the binary, the man pages of sections 1 and 7, three completions, the units, the alerting rules and the jobs' directory under DESTDIR" {
	local dest=$BATS_TEST_TMPDIR/stage
	run -0 make -s -C "$REPO_DIR" install PREFIX=/usr DESTDIR="$dest"
	assert [ -x "$dest/usr/bin/redlock" ]
	cmp "$REPO_DIR/man/redlock.1" "$dest/usr/share/man/man1/redlock.1"
	# Every page of section 7 in man/, as the Makefile finds them.
	local page pages=0
	for page in "$REPO_DIR"/man/*.7; do
		cmp "$page" "$dest/usr/share/man/man7/${page##*/}"
		pages=$((pages + 1))
	done
	assert_equal "$pages" 3
	assert [ -f "$dest/usr/share/bash-completion/completions/redlock" ]
	assert [ -f "$dest/usr/share/zsh/site-functions/_redlock" ]
	assert [ -f "$dest/usr/share/fish/vendor_completions.d/redlock.fish" ]
	assert [ -f "$dest/usr/lib/systemd/system/redlock-job@.service" ]
	assert [ -f "$dest/usr/lib/systemd/system/redlock-job@.timer" ]
	cmp "$REPO_DIR/monitoring/redlock.rules.yml" "$dest/usr/share/redlock/redlock.rules.yml"
	# The directory of the first step of SYSTEMD in redlock-scheduling(7)
	# (install -m 755 report.sh /etc/redlock/jobs/report), empty.
	assert [ -d "$dest/etc/redlock/jobs" ]
	run -0 stat -c %a "$dest/etc/redlock/jobs"
	assert_output 755
	run -0 "$dest/usr/bin/redlock" --version
	assert_output --regexp '^redlock [0-9]'
	# Nothing else, and nothing outside DESTDIR/PREFIX.
	run -0 sh -c "cd '$dest' && find . -type f | sort"
	assert_equal "${#lines[@]}" 11
	run -0 make -s -C "$REPO_DIR" uninstall PREFIX=/usr DESTDIR="$dest"
	run -0 sh -c "cd '$dest' && find . -type f | wc -l"
	assert_output 0
	assert [ ! -e "$dest/usr/share/redlock" ]
	assert [ ! -e "$dest/etc/redlock" ]
}

@test "make uninstall leaves the jobs' directory while a job is in it" {
	local dest=$BATS_TEST_TMPDIR/stage
	run -0 make -s -C "$REPO_DIR" install PREFIX=/usr DESTDIR="$dest"
	printf '#!/bin/sh\n' >"$dest/etc/redlock/jobs/report"
	run -0 make -s -C "$REPO_DIR" uninstall PREFIX=/usr DESTDIR="$dest"
	assert [ -f "$dest/etc/redlock/jobs/report" ]
	assert [ ! -e "$dest/usr/bin/redlock" ]
}

@test "make install honours PREFIX" {
	local dest=$BATS_TEST_TMPDIR/stage
	run -0 make -s -C "$REPO_DIR" install PREFIX=/opt/rl DESTDIR="$dest"
	assert [ -x "$dest/opt/rl/bin/redlock" ]
	assert [ -f "$dest/opt/rl/share/man/man1/redlock.1" ]
	assert [ -f "$dest/opt/rl/share/man/man7/redlock-protocol.7" ]
	# The units run the binary where it was installed.
	run -0 grep '^ExecStart=' "$dest/opt/rl/lib/systemd/system/redlock-job@.service"
	assert_output --partial '=/opt/rl/bin/redlock '
	# The jobs stay in /etc/redlock/jobs, where redlock-scheduling(7) and
	# the units say they are.
	assert_output --partial ' /etc/redlock/jobs/%i'
	assert [ -d "$dest/etc/redlock/jobs" ]
}
