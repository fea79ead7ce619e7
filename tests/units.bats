#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The shipped job units (systemd/; redlock-scheduling(7), SYSTEMD) as an
# operator gets them, checked without a booted systemd: the service's
# own command line and environment run against a private server, its
# timeout and the timer's schedule are read by systemd-analyze, and so
# is its sandbox.  tests/package/systemd-check.sh runs the same units
# under a booted systemd.

load helpers

lifecycle main

SERVICE=$REPO_DIR/systemd/redlock-job@.service
TIMER=$REPO_DIR/systemd/redlock-job@.timer

# unit_value FILE KEY: the value of KEY= in FILE (the last one, as
# systemd reads a single-valued setting), or nothing.
unit_value() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# usec SPAN: a systemd time span ("50min", "5m") in microseconds; empty
# or "infinity" print nothing.
usec() {
	[[ -n $1 && $1 != infinity ]] || return 0
	# "μs", or "us" in the C locale.
	systemd-analyze timespan "$1" | awk '$1 == "μs:" || $1 == "us:" { print $2 }'
}

# secs FILE KEY DEFAULT: KEY='s time span in whole seconds, DEFAULT
# (systemd's) when FILE does not set it; nothing for "infinity".
secs() {
	local us
	us=$(usec "$(unit_value "$1" "$2")")
	if [[ -n $(unit_value "$1" "$2") ]]; then
		[[ -z $us ]] || echo $((us / 1000000))
	else
		echo "$3"
	fi
}

# job_tick: one tick of redlock-job@tick.service as systemd would start
# it: the service's Environment= and ExecStart= with %i as tick, the
# binary under test, and the job in the test's directory.  Sets status,
# output and stderr (bats' run).
job_tick() {
	local line env
	local -a argv envs=()
	line=$(unit_value "$SERVICE" ExecStart)
	line=${line//\/usr\/bin\/redlock/$RL}
	line=${line//\/etc\/redlock\/jobs\//$BATS_TEST_TMPDIR\/jobs\/}
	read -r -a argv <<<"${line//%i/tick}"
	while read -r env; do
		envs+=("$env")
	done < <(sed -n 's/^Environment=//p' "$SERVICE")
	run --separate-stderr env "${envs[@]}" "${argv[@]}"
}

# ticks TZ CALENDAR N: the first N times (epoch seconds) that CALENDAR
# elapses, for a host whose time zone is TZ.  systemd-analyze prints each
# in the zone's time and, unless that is UTC, again "(in UTC)".
ticks() {
	TZ=$1 systemd-analyze calendar --iterations="$3" "$2" | awk '
		/Next elapse:|Iter\. #/ { if (t != "") print t; t = $(NF - 2) " " $(NF - 1) }
		/\(in UTC\):/ { t = $(NF - 2) " " $(NF - 1) }
		END { if (t != "") print t }' |
		while read -r d t; do
			date -u -d "$d $t UTC" +%s
		done
}

test_setup() {
	mkdir -p "$BATS_TEST_TMPDIR/jobs"
	printf '#!/bin/sh\necho ran >>"%s"\n' "$BATS_TEST_TMPDIR/ran" \
		>"$BATS_TEST_TMPDIR/jobs/tick"
	chmod 755 "$BATS_TEST_TMPDIR/jobs/tick"
}

@test "every tick of the job unit leaves a line for the journal: a run, a skip for --once-per, a busy lock" {
	job_tick
	assert_equal "$status" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/ran")" ran
	assert_regex "$stderr" "redlock: acquired lock 'tick'"
	assert_regex "$stderr" "redlock: released lock 'tick'"

	# Another host's tick in the same period: status 100, which the unit
	# counts as a success, and a line that says why nothing ran.
	job_tick
	assert_equal "$status" "$(unit_value "$SERVICE" SuccessExitStatus)"
	assert_regex "$stderr" "lock 'tick': already run successfully .*; skipping the command"

	# A tick while another host runs it.
	hold_lock h tick
	job_tick
	assert_equal "$status" 100
	assert_regex "$stderr" "lock 'tick' is held by someone else"
	release_lock h
	assert_equal "$(wc -l <"$BATS_TEST_TMPDIR/ran")" 1
}

@test "the job unit stops a hung job, and so frees its lock, before the timer's next tick" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local timeout delay accuracy stop first second
	# A oneshot's start timeout is infinity by default.
	timeout=$(secs "$SERVICE" TimeoutStartSec infinity)
	[[ $timeout =~ ^[0-9]+$ ]] ||
		fail "no TimeoutStartSec=: a hung job would hold its lock forever"
	delay=$(secs "$TIMER" RandomizedDelaySec 0)
	accuracy=$(secs "$TIMER" AccuracySec 60)
	stop=$(secs "$SERVICE" TimeoutStopSec 90)
	{ read -r first && read -r second; } < <(ticks UTC "$(unit_value "$TIMER" OnCalendar)" 2)
	# A job that starts as late as a tick can, plus its timeout and its
	# stop, ends before the earliest next tick.
	assert [ $((delay + accuracy + timeout + stop)) -lt $((second - first)) ]
}

@test "the timer ticks in the middle of the --once-per period, in UTC, whatever the host's time zone" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local cal period delay accuracy tz t off
	cal=$(unit_value "$TIMER" OnCalendar)
	period=$(($(usec "$(sed -n 's/^Environment=REDLOCK_ONCE_PER=//p' "$SERVICE")") / 1000000))
	delay=$(secs "$TIMER" RandomizedDelaySec 0)
	accuracy=$(secs "$TIMER" AccuracySec 60)
	# A tick fires somewhere in [t, t + delay + accuracy]; that window
	# stays a third of a period from either edge, so hosts whose clocks
	# differ by less than that fire in the same period of the server.
	for tz in UTC Europe/Paris Asia/Kolkata Asia/Kathmandu America/St_Johns; do
		for t in $(ticks "$tz" "$cal" 3); do
			off=$((t % period))
			((off >= period / 3)) ||
				fail "$tz: a tick $off s into a period of $period s"
			((off + delay + accuracy <= period - period / 3)) ||
				fail "$tz: a tick's window ends $((period - off - delay - accuracy)) s before the end of a period of $period s"
		done
	done
}

@test "systemd-analyze security rates the job unit better than 6 of 10, run as root" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local d=$BATS_TEST_TMPDIR/units
	mkdir -p "$d"
	sed "s|/usr/bin/redlock|$REDLOCK_BIN_UNDER_TEST|" "$SERVICE" >"$d/redlock-job@tick.service"
	run systemd-analyze security --offline=true --threshold=60 --no-pager \
		"$d/redlock-job@tick.service"
	assert_success
	assert_line --partial 'Overall exposure level for redlock-job@tick.service'
}
