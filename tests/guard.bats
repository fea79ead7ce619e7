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

# start_after_wait NAME TTL: background job w runs LOOPING (in
# $BATS_TEST_TMPDIR/w) under NAME once h, holding it first, releases it;
# w's guard is there while it waits, before the release wakes it.
start_after_wait() {
	local d=$BATS_TEST_TMPDIR
	hold_lock h "$1"
	mkdir "$d/w"
	bg_start w "$RL" -t "$2" "$1" sh -c "$LOOPING" cmd "$d/w"
	assert wait_until -t 5 children_of "$(bg_pid w)"
	release_lock h
	wait_for_file "$d/w/held"
}

# SIGSTOP background job NAME's whole process group while its command
# (the loop whose pid is in FILE) runs under a 1 s lease: the loop must
# die within the lease (1.5 s, not the seconds a stopped redlock could
# take), and redlock, continued, exit 75.
stop_group_within_lease() {
	local name=$1 loop start
	loop=$(cat "$2")
	start=$(now_ms)
	kill -STOP -- "-$(bg_pid "$name")"
	echo "-$(bg_pid "$name")" >>"$BATS_TEST_TMPDIR/stopped.pids" 2>/dev/null || true
	assert wait_until -t 3 pid_dead "$loop"
	(($(now_ms) - start < 1500)) || fail "killed only after $(($(now_ms) - start)) ms"
	kill -CONT -- "-$(bg_pid "$name")"
	bg_wait "$name"
	assert_equal "$BG_STATUS" 75
}

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
	stop_group_within_lease h "$d/loop"
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

# The children of process $1 (as the kernel lists them, on one line with
# no newline), one a line; false when it has none.
children_of() {
	local c
	c=$(cat "/proc/$1/task/$1/children" 2>/dev/null) && [ -n "$c" ] ||
	    return 1
	# shellcheck disable=SC2086 # one pid a word
	printf '%s\n' $c
}

@test "a run that waited for the lock: SIGKILL to its whole process group kills the command's background processes at once" {
	local d=$BATS_TEST_TMPDIR
	start_after_wait waited 2s
	local loop
	loop=$(cat "$d/w/loop")
	kill -KILL -- "-$(bg_pid w)"
	assert wait_until -t 1 pid_dead "$loop"
	assert wait_until -t 1 pid_dead "$(cat "$d/w/child")"
}

@test "a run that waited for the lock, stopped with its process group: the command is killed before its lease ends" {
	local d=$BATS_TEST_TMPDIR
	start_after_wait waitstop 1s
	stop_group_within_lease w "$d/w/loop"
}

@test "a waiter that gives up (-w) leaves no guard behind, and one killed while it waits neither" {
	local d=$BATS_TEST_TMPDIR guard
	hold_lock h giveup
	bg_start w "$RL" -w 1s giveup true
	assert wait_until -t 5 children_of "$(bg_pid w)"
	guard=$(children_of "$(bg_pid w)")
	bg_wait w
	assert_equal "$BG_STATUS" 1
	assert wait_until -t 2 pid_dead "$guard"
	bg_start k "$RL" giveup true
	assert wait_until -t 5 children_of "$(bg_pid k)"
	guard=$(children_of "$(bg_pid k)")
	kill -KILL "$(bg_pid k)"
	assert wait_until -t 2 pid_dead "$guard"
	release_lock h
	assert_equal "$BG_STATUS" 0
}

# Is no process left whose arguments end in "-n refused true"?  A
# guard that shares redlock's memory shows redlock's arguments.
no_refused_run() {
	local f a
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' -t a <"$f" 2>/dev/null || continue
		[[ " ${a[*]} " != *" -n refused true " ]] || return 1
	done
	return 0
}

@test "a run refused at once (-n) leaves no guard behind: the one it started while its attempt was on its way stands down" {
	hold_lock h refused
	run -1 "$RL" -n refused true
	assert wait_until -t 2 no_refused_run
	release_lock h
	assert_equal "$BG_STATUS" 0
}

# Is process $1's parent $2?
parent_is() {
	local stat rest
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	rest=${stat##*) }
	read -r _ rest _ <<<"$rest"
	[ "$rest" = "$2" ]
}

@test "a run that waited for the lock, SIGKILLed alone: an orphan of its command in another session dies too (it carries the token of the attempt that got the lock)" {
	local d=$BATS_TEST_TMPDIR
	hold_lock h orphan
	mkdir "$d/w"
	# The orphan is redlock's (the subreaper's) child, in a session of
	# its own: only the token finds it once redlock is gone.
	bg_start w "$RL" -t 5s orphan sh -c '(setsid sh -c "echo \$\$ >\"$1/esc\"; exec sleep 30" &)
		: >"$1/held"; exec sleep 60' cmd "$d/w"
	assert wait_until -t 5 children_of "$(bg_pid w)"
	release_lock h
	wait_for_file "$d/w/held"
	wait_for_file "$d/w/esc"
	local esc
	esc=$(cat "$d/w/esc")
	assert wait_until -t 5 parent_is "$esc" "$(bg_pid w)"
	kill -KILL "$(bg_pid w)"
	assert wait_until -t 2 pid_dead "$esc"
}

# Is a child of process $1 the guard exec'd as a process of its own?
own_guard() {
	local c
	for c in $(pgrep -P "$1"); do
		[[ $(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null) == "redlock (guard) " ]] &&
			return 0
	done
	return 1
}

@test "a guard that has lived a second is a process of its own, 'redlock (guard)', that still kills the command's tree, found by its token too, when redlock is SIGKILLed" {
	# A sanitizer's runtime cannot share memory with the guard, so its
	# builds fork the guard as a process of its own from the start.
	if nm "$REDLOCK" 2>/dev/null | grep -qE '__(a|t)san_init'; then
		skip "a sanitizer build forks its guard"
	fi
	local d=$BATS_TEST_TMPDIR loop esc
	bg_start h "$RL" -t 5s own sh -c '(setsid sh -c "echo \$\$ >\"$1/esc\"; exec sleep 30" &)
		'"$LOOPING" cmd "$d"
	wait_for_file "$d/held"
	wait_for_file "$d/esc"
	# At GUARD_SHARED_MS (guard.c), with a second of room for a loaded
	# machine.
	assert wait_until -t 3 own_guard "$(bg_pid h)"
	loop=$(cat "$d/loop") esc=$(cat "$d/esc")
	kill -KILL "$(bg_pid h)"
	assert wait_until -t 2 pid_dead "$loop"
	assert wait_until -t 2 pid_dead "$esc"
}

# guard_of RL CMD: the child of redlock RL that is not its command CMD
# (its guard), on stdout; fails while there is none.
guard_of() {
	local p
	for p in $(children_of "$1"); do
		[[ $p != "$2" ]] && echo "$p" && return 0
	done
	return 1
}
guard_is_new() { local g; g=$(guard_of "$1" "$2") && [[ $g != "$3" ]]; }

@test "a guard SIGKILLed while the command runs is replaced: redlock stopped after that still cannot leave the command running past its lease" {
	local d=$BATS_TEST_TMPDIR rl cmd old
	bg_start h "$RL" -t 2s gk sh -c 'echo $$ >"$1"; exec sleep 600' sh "$d/cmd"
	wait_for_file "$d/cmd" 10
	rl=$(bg_pid h)
	cmd=$(cat "$d/cmd")
	assert wait_until -t 5 guard_of "$rl" "$cmd"
	old=$(guard_of "$rl" "$cmd")
	kill -KILL "$old"
	assert wait_until -t 5 guard_is_new "$rl" "$cmd" "$old"
	stop_pid "$rl"
	# The new guard kills the command before the 2 s lease ends.
	assert wait_until -t 4 pid_dead "$cmd"
	cont_pid "$rl"
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
}
