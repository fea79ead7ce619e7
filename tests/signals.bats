#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Signals (redlock(1), EXIT STATUS 128+N): forwarded to the command; redlock's own
# death takes the command with it; a signal while waiting leaves nothing.

load helpers

lifecycle main

# start_trapper TAG SIG NAME: a background holder whose command traps SIG,
# writes the signal's name to TAG.got and exits 7.
start_trapper() {
	local tag=$1 sig=$2 name=$3 d=$BATS_TEST_TMPDIR
	bg_start "$tag" "$RL" "$name" /bin/sh -c '
		trap "echo $4 >\"$3\"; exit 7" "$4"
		echo $$ >"$1"; : >"$2"; i=0
		while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done' \
		trapper "$d/$tag.child" "$d/$tag.held" "$d/$tag.got" "$sig"
	wait_for_file "$d/$tag.held" 20
}

assert_forwarded() {
	local sig=$1
	start_trapper t "$sig" name
	kill "-$sig" "$(bg_pid t)"
	bg_wait t 15
	assert_equal "$BG_STATUS" 7
	assert_equal "$(cat "$BATS_TEST_TMPDIR/t.got")" "$sig"
	assert key_absent redlock:name
	run -0 redlock -n name true
}

@test "SIGTERM is forwarded to the command and its status is redlock's" {
	assert_forwarded TERM
}

@test "SIGINT is forwarded to the command" {
	assert_forwarded INT
}

@test "SIGHUP is forwarded to the command" {
	assert_forwarded HUP
}

@test "SIGUSR1 is forwarded to the command" {
	assert_forwarded USR1
}

@test "SIGUSR2 is forwarded to the command" {
	assert_forwarded USR2
}

@test "SIGQUIT is forwarded to the command" {
	assert_forwarded QUIT
}

@test "a forwarded SIGTERM that kills the command gives 143 and releases the lock" {
	hold_lock h name
	kill -TERM "$(bg_pid h)"
	bg_wait h 15
	assert_equal "$BG_STATUS" 143
	assert key_absent redlock:name
}

@test "a forwarded SIGINT that kills the command gives 130" {
	hold_lock h name
	kill -INT "$(bg_pid h)"
	bg_wait h 15
	assert_equal "$BG_STATUS" 130
	assert key_absent redlock:name
}

@test "a forwarded SIGHUP that kills the command gives 129" {
	hold_lock h name
	kill -HUP "$(bg_pid h)"
	bg_wait h 15
	assert_equal "$BG_STATUS" 129
	assert key_absent redlock:name
}

@test "redlock waits for a command that survives a forwarded signal" {
	local d=$BATS_TEST_TMPDIR
	bg_start s "$RL" name /bin/sh -c '
		trap ": >\"$3\"" TERM
		: >"$1"; . "$TESTS_DIR/lib/await.sh"
		await_file "$2"
		exit 5' survivor "$d/s.held" "$d/s.release" "$d/s.term"
	wait_for_file "$d/s.held" 20
	local pid
	pid=$(bg_pid s)
	kill -TERM "$pid"
	wait_for_file "$d/s.term" 10
	# The command goes on, so redlock goes on holding the lock.
	assert stays_false -t 1 pid_dead "$pid"
	assert key_exists redlock:name
	: >"$d/s.release"
	bg_wait s 15
	assert_equal "$BG_STATUS" 5
	assert key_absent redlock:name
}

@test "redlock killed with SIGKILL takes its command with it at once" {
	hold_lock h name
	local child
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	assert pid_alive "$child"
	kill -KILL "$(bg_pid h)"
	assert wait_for_exit "$child" 5
	# Nobody released it: the key stays until its TTL runs out.
	assert key_exists redlock:name
	assert [ "$(rcli PTTL redlock:name)" -gt 0 ]
}

@test "the key of a SIGKILLed redlock expires after its TTL" {
	hold_lock h -t 2s name
	kill -KILL "$(bg_pid h)"
	assert wait_for_exit "$(cat "$BATS_TEST_TMPDIR/h.child")" 5
	wait_for_no_key redlock:name 10
	run -0 redlock -n name true
}

# signal_waiter SIG STATUS: a waiter stopped by SIG exits STATUS, never
# runs its command and leaves the keyspace as it found it.
signal_waiter() {
	local sig=$1 want=$2
	hold_lock h name
	local before token c0
	before=$(keyspace_snapshot)
	token=$(rcli GET redlock:name)
	c0=$(clients_count)
	bg_start w "$RL" name touch "$BATS_TEST_TMPDIR/w.got"
	wait_until -t 10 eval '(($(clients_count) > c0))'
	kill "-$sig" "$(bg_pid w)"
	bg_wait w 15
	assert_equal "$BG_STATUS" "$want"
	assert [ ! -e "$BATS_TEST_TMPDIR/w.got" ]
	assert_equal "$(keyspace_snapshot)" "$before"
	assert_equal "$(rcli GET redlock:name)" "$token"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:name
	assert [ ! -e "$BATS_TEST_TMPDIR/w.got" ]
}

@test "SIGTERM while waiting for a held lock exits 143 and leaves nothing in Redis" {
	signal_waiter TERM 143
}

@test "SIGINT while waiting for a held lock exits 130 and leaves nothing in Redis" {
	signal_waiter INT 130
}

@test "SIGHUP while waiting for a held lock exits 129 and leaves nothing in Redis" {
	signal_waiter HUP 129
}

@test "SIGUSR1 while waiting (no --respawn) exits 138 and leaves nothing in Redis, as the man page says of any signal then" {
	signal_waiter USR1 138
}

# Not only the six that redlock(1) forwards: any signal that would end
# it (timeout -s ALRM, a CPU limit) takes back what the wait left.
@test "SIGALRM and SIGXCPU while waiting exit 142 and 152 and leave nothing in Redis" {
	signal_waiter ALRM 142
	signal_waiter XCPU 152
}

@test "SIGALRM while the command runs is passed on to it, and the lock is released" {
	run -142 redlock name sh -c 'kill -ALRM "$PPID"; sleep 5; exit 3'
	assert key_absent redlock:name
}
