#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The guard (redlock(1), "Running a command under the lock"): whatever happens to redlock - killed or stopped
# together with its whole process group (timeout -s KILL, kill %1, kill
# -STOP %1), stopped before the command had run a moment - the command's
# whole tree is dead before the lease can end.  Nothing but the guard
# could stop it then, so the guard must exist before the command does and
# must not share redlock's process group.

load helpers
load fault_helpers
lifecycle main

# A command ($1 dir): a background loop that appends to $1/ticks, its
# pid in $1/loop, its own pid in $1/child; says $1/held; sleeps.
LOOPING='d=$1
	(i=0; while [ $i -lt 1200 ]; do echo x >>"$d/ticks"; sleep 0.05; i=$((i+1)); done) &
	echo $! >"$d/loop"; echo $$ >"$d/child"; : >"$d/held"; sleep 60'

@test "SIGKILL to redlock's whole process group (timeout -s KILL) kills the command's background processes at once" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 2s grp sh -c "$LOOPING" cmd "$d"
	wait_for_file "$d/held"
	local loop
	loop=$(cat "$d/loop")
	# $SPAWN made redlock the leader of its own group, as timeout(1)
	# makes the group it signals.
	kill -KILL -- "-$(bg_pid h)"
	assert wait_until -t 1 pid_dead "$loop"
	assert wait_until -t 1 pid_dead "$(cat "$d/child")"
}

@test "SIGSTOP to redlock's whole process group: the command is killed before its lease ends, and redlock exits 75 once continued" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 1s stopgrp sh -c "$LOOPING" cmd "$d"
	wait_for_file "$d/held"
	local loop start
	loop=$(cat "$d/loop")
	start=$(now_ms)
	kill -STOP -- "-$(bg_pid h)"
	echo "-$(bg_pid h)" >>"$BATS_TEST_TMPDIR/stopped.pids" 2>/dev/null || true
	assert wait_until -t 3 pid_dead "$loop"
	# Within the 1 s lease (not the 10 s of the wait above).
	(($(now_ms) - start < 1500)) || fail "killed only after $(($(now_ms) - start)) ms"
	kill -CONT -- "-$(bg_pid h)"
	bg_wait h
	assert_equal "$BG_STATUS" 75
}

@test "redlock stopped the moment its command starts: the command still dies before the lease ends" {
	local d=$BATS_TEST_TMPDIR
	# The command stops its parent, redlock, before anything else.
	bg_start h "$RL" -t 1s early sh -c 'kill -STOP $PPID; echo $$ >"$1/child"
		i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' cmd "$d"
	wait_for_file "$d/child"
	assert wait_until -t 3 pid_dead "$(cat "$d/child")"
	kill -CONT "$(bg_pid h)"
	bg_wait h
	assert_equal "$BG_STATUS" 75
}

@test "redlock stop: a command's SIGTERM trap runs once" {
	local d=$BATS_TEST_TMPDIR
	# The trap does not exit: a second SIGTERM would run it again.
	bg_start h "$RL" -t 3s --kill-after 1s once sh -c 'trap "echo term >>\"$1/traps\"" TERM
		: >"$1/held"; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' cmd "$d"
	wait_for_file "$d/held"
	run -0 redlock stop -w 5s once
	bg_wait h
	assert_equal "$BG_STATUS" 137
	run cat "$d/traps"
	assert_output term
}

@test "SIGTERM to redlock: a command's SIGTERM trap runs once" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 3s --kill-after 1s once2 sh -c 'trap "echo term >>\"$1/traps\"" TERM
		: >"$1/held"; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' cmd "$d"
	wait_for_file "$d/held"
	kill -TERM "$(bg_pid h)"
	bg_wait h
	assert_equal "$BG_STATUS" 137
	run cat "$d/traps"
	assert_output term
}
