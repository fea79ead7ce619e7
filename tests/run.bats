#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Running a command under the lock (redlock(1), SYNOPSIS, the run forms, and EXIT STATUS).

load helpers

AUTH_PW='run-bats-Secret-8c1f'

lifecycle main -- auth --tcp --requirepass "$AUTH_PW"

free_now() { redlock -n "$@" true >/dev/null 2>&1; }

@test "the run form runs COMMAND with its arguments" {
	run -0 redlock name printf '%s|' a 'b c' '' "d'e"
	assert_output "a|b c||d'e|"
}

@test "stdout is the command's alone and a quiet run prints no diagnostics" {
	run -0 --separate-stderr redlock name echo hello
	assert_equal "$output" hello
	assert_equal "$stderr" ''
}

@test "-v reports progress on stderr only, each line prefixed" {
	run -0 --separate-stderr redlock -v name echo out
	assert_equal "$output" out
	assert [ "${#stderr_lines[@]}" -ge 1 ]
	assert_diagnostics
}

@test "the command reads redlock's stdin" {
	run -0 bash -c 'printf "line1\nline2\n" | "$RL" name cat'
	assert_output $'line1\nline2'
}

@test "the command inherits the environment" {
	FOO_FOR_CHILD='x y' run -0 redlock name sh -c 'printf %s "$FOO_FOR_CHILD"'
	assert_output 'x y'
}

@test "the run verb takes a lock named like a verb" {
	local v
	for v in run acquire release extend status list break; do
		run -0 redlock run "$v" sh -c 'printf "%s|%s" "$REDLOCK_NAME" "$REDLOCK_KEY"'
		assert_output "$v|redlock:$v"
	done
}

@test "the run verb accepts options before NAME" {
	run -0 redlock run -p 'x:' -t 20s name sh -c 'printf %s "$REDLOCK_KEY"'
	assert_output 'x:name'
}

@test "options may come before the run verb" {
	run -0 redlock -p 'y:' run name sh -c 'printf %s "$REDLOCK_KEY"'
	assert_output 'y:name'
}

@test "-c runs the string with /bin/sh -c" {
	run -4 redlock name -c 'echo $((2 + 3)); exit 4'
	assert_output 5
}

@test "--command after NAME works like -c" {
	run -0 redlock name --command 'echo "$REDLOCK_NAME"'
	assert_output name
}

@test "-c may come among the options before NAME" {
	run -0 redlock -c 'echo before' name
	assert_output before
	run -0 redlock -n -c 'echo "$REDLOCK_KEY"' -t 5s name
	assert_output redlock:name
}

@test "options stop at COMMAND" {
	run -0 --separate-stderr redlock name printf '%s\n' -n -t --help -c x -E 3
	assert_equal "$output" $'-n\n-t\n--help\n-c\nx\n-E\n3'
	run -0 redlock -t 5s name sh -c 'echo "$0 $1"' zero -w
	assert_output 'zero -w'
}

@test "the command gets REDLOCK_NAME and REDLOCK_KEY" {
	run -0 redlock my-job sh -c 'printf "%s\n%s\n" "$REDLOCK_NAME" "$REDLOCK_KEY"'
	assert_equal "$output" $'my-job\nredlock:my-job'
}

@test "REDLOCK_TOKEN is a UUID and is the key's value while the command runs" {
	# shellcheck disable=SC2016
	run -0 redlock name sh -c '
		v=$(redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY")
		[ "$v" = "$REDLOCK_TOKEN" ] || { echo "key=$v token=$REDLOCK_TOKEN"; exit 9; }
		printf %s "$REDLOCK_TOKEN"'
	assert_regex "$output" "$UUID_RE"
}

@test "every run gets a fresh token" {
	run -0 redlock name printenv REDLOCK_TOKEN
	local t1=$output
	run -0 redlock name printenv REDLOCK_TOKEN
	assert_regex "$output" "$UUID_RE"
	assert_not_equal "$output" "$t1"
}

@test "REDLOCK_FENCE is an integer that increases with every grant" {
	local prev=-1 i
	for i in 1 2 3; do
		run -0 redlock name printenv REDLOCK_FENCE
		assert_regex "$output" '^[0-9]+$'
		assert [ "$output" -gt "$prev" ]
		prev=$output
	done
}

@test "the key has a TTL no longer than -t while the command runs" {
	run -0 redlock -t 10s name sh -c 'redis-cli -s "$REDIS_SOCK" PTTL "$REDLOCK_KEY"'
	assert [ "$output" -gt 0 ]
	assert [ "$output" -le 10000 ]
}

@test "the default TTL is 30 seconds" {
	run -0 redlock name sh -c 'redis-cli -s "$REDIS_SOCK" PTTL "$REDLOCK_KEY"'
	assert [ "$output" -gt 15000 ]
	assert [ "$output" -le 30000 ]
}

@test "the lock is held while the command runs" {
	hold_lock h name
	assert key_exists redlock:name
	run -1 redlock -n name touch "$BATS_TEST_TMPDIR/second"
	assert [ ! -e "$BATS_TEST_TMPDIR/second" ]
	release_lock h
	assert_equal "$BG_STATUS" 0
}

@test "the key is removed when the command ends" {
	run -0 redlock name sh -c 'redis-cli -s "$REDIS_SOCK" EXISTS "$REDLOCK_KEY"'
	assert_output 1
	assert key_absent redlock:name
	run -3 redlock name sh -c 'exit 3'
	assert key_absent redlock:name
	assert free_now name
}

@test "the command's exit status is redlock's" {
	local s
	for s in 0 1 2 3 42 126 127 200 255; do
		run "-$s" redlock name sh -c "exit $s"
	done
}

@test "a command killed by signal N gives 128+N and the lock is released" {
	run -143 redlock name sh -c 'kill -TERM $$'
	assert key_absent redlock:name
	run -137 redlock name sh -c 'kill -KILL $$'
	assert key_absent redlock:name
	run -138 redlock name sh -c 'kill -USR1 $$'
	# SIGHUP as the default: under nohup(1) it is ignored from the start,
	# and redlock leaves the command a signal ignored at its own start.
	run -129 env --default-signal=HUP "$RL" name sh -c 'kill -HUP $$'
	assert key_absent redlock:name
	assert free_now name
}

@test "a command that is not executable exits 126 and the lock is released" {
	local f=$BATS_TEST_TMPDIR/not-executable
	printf '#!/bin/sh\necho ran\n' >"$f"
	chmod 644 "$f"
	run -126 redlock name "$f"
	refute_output --partial ran
	assert key_absent redlock:name
	assert free_now name
	run -126 redlock name "$BATS_TEST_TMPDIR"
	assert key_absent redlock:name
}

@test "a command that is not found exits 127 and the lock is released" {
	run -127 redlock name "no-such-command-$$-$RANDOM"
	assert key_absent redlock:name
	run -127 redlock name /nonexistent/dir/cmd
	assert key_absent redlock:name
	assert free_now name
}

@test "-p sets the key prefix" {
	run -0 redlock -p 'pfx:' name sh -c '
		printf "%s " "$REDLOCK_KEY"; redis-cli -s "$REDIS_SOCK" EXISTS "$REDLOCK_KEY"'
	assert_output 'pfx:name 1'
	run -0 redlock --prefix 'long/' name printenv REDLOCK_KEY
	assert_output 'long/name'
}

@test "REDLOCK_PREFIX sets the prefix and -p overrides it" {
	REDLOCK_PREFIX='env:' run -0 redlock name sh -c '
		printf "%s " "$REDLOCK_KEY"; redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY"'
	assert_regex "$output" '^env:name [0-9a-f-]{36}$'
	REDLOCK_PREFIX='env:' run -0 redlock -p 'opt:' name printenv REDLOCK_KEY
	assert_output 'opt:name'
}

@test "an empty prefix makes the key the bare NAME" {
	run -0 redlock -p '' name sh -c '
		printf "%s " "$REDLOCK_KEY"; redis-cli -s "$REDIS_SOCK" EXISTS name'
	assert_output 'name 1'
}

@test "the same NAME under different prefixes are different locks" {
	hold_lock h -p 'a:' name
	run -0 redlock -n -p 'b:' name true
	run -1 redlock -n -p 'a:' name true
	release_lock h
}

@test "-u overrides REDLOCK_URL" {
	REDLOCK_URL=unix:///nonexistent/redis.sock run -0 redlock -u "unix://$REDIS_SOCK" name \
		sh -c 'redis-cli -s "$REDIS_SOCK" EXISTS "$REDLOCK_KEY"'
	assert_output 1
}

@test "no Redis socket or other descriptor leaks into the command (unix socket)" {
	# $SPAWN closes every fd above 2 first, so whatever the command sees
	# beyond 0, 1, 2 was opened by redlock.
	run -0 "$SPAWN" "$RL" -t 3s name /bin/sh -c 'ls /proc/$$/fd; exit 0'
	assert_equal "${lines[*]}" '0 1 2'
}

@test "no Redis socket or other descriptor leaks into the command (TCP)" {
	local port
	port=$(redis_port auth)
	REDLOCK_PASSWORD=$AUTH_PW run -0 "$SPAWN" "$RL" -t 3s \
		-u "redis://127.0.0.1:$port" name /bin/sh -c 'ls /proc/$$/fd; exit 0'
	assert_equal "${lines[*]}" '0 1 2'
}

@test "the harness itself passes the descriptor check" {
	# Sanity check of the check above: without redlock, only 0 1 2.
	run -0 "$SPAWN" /bin/sh -c 'ls /proc/$$/fd; exit 0'
	assert_equal "${lines[*]}" '0 1 2'
	# ... and an inherited descriptor would be seen.
	run -0 bash -c 'exec 7</dev/null; exec /bin/sh -c "ls /proc/\$\$/fd; exit 0"'
	assert_output --partial 7
}

@test "REDLOCK_PASSWORD is removed from the command's environment" {
	local port
	port=$(redis_port auth)
	REDLOCK_PASSWORD=$AUTH_PW run -0 redlock -u "redis://127.0.0.1:$port" name env
	assert_line --regexp '^REDLOCK_TOKEN='
	refute_line --regexp '^REDLOCK_PASSWORD='
	refute_output --partial "$AUTH_PW"
}

@test "REDISCLI_AUTH is removed from the command's environment" {
	local port
	port=$(redis_port auth)
	REDISCLI_AUTH=$AUTH_PW run -0 redlock -u "redis://127.0.0.1:$port" name env
	assert_line --regexp '^REDLOCK_TOKEN='
	refute_line --regexp '^REDISCLI_AUTH='
	refute_output --partial "$AUTH_PW"
}

@test "--max-time stops the command and exits 124, releasing the lock" {
	local t0 t1
	t0=$(now_ms)
	run -124 redlock --max-time 1s name sh -c 'echo $$ >"$1"; exec sleep 30' sh "$BATS_TEST_TMPDIR/child"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 900 ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 15000)" ]
	assert wait_for_exit "$(cat "$BATS_TEST_TMPDIR/child")" 5
	assert key_absent redlock:name
}

@test "--max-time that does not run out leaves the command's status" {
	run -5 redlock --max-time 1h name sh -c 'exit 5'
}

@test "--min-hold keeps the lock after a short command" {
	local t0 t1
	t0=$(now_ms)
	run -0 redlock --min-hold 3s name true
	run redlock -n name true
	t1=$(now_ms)
	# Meaningful only if the machine did not stall for the whole window.
	if ((t1 - t0 < 2500)); then
		assert_equal "$status" 1
	fi
	# Free again soon after the window, and never before it ends.
	wait_until -t 15 free_now name
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 2950 ]
}

@test "--min-hold does not keep a lock whose command could not be started" {
	run -127 --separate-stderr redlock --min-hold 1m name "$BATS_TEST_TMPDIR/no-such-command"
	assert key_absent redlock:name
	run -126 --separate-stderr redlock --min-hold 1m name "$BATS_TEST_TMPDIR"
	assert key_absent redlock:name
	# Nor one that -c's shell could not run (exec_failed, as the outcome
	# says).
	run -127 --separate-stderr redlock --min-hold 1m name -c "$BATS_TEST_TMPDIR/no-such-command"
	assert key_absent redlock:name
	# A command that ran and exited 127 itself keeps it.
	run -127 redlock --min-hold 1m name sh -c 'exit 127'
	run -1 redlock -n name true
}
