#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# systemd's notification protocol (SYSTEMD in redlock-scheduling(7)): with NOTIFY_SOCKET set, the
# run form reports its wait, its readiness and its release to a datagram
# listener that stands in for systemd (tests/notify_listener.py); the
# command does not inherit the socket.  The shipped units pass
# systemd-analyze verify.

load helpers

lifecycle main

# start_listener [ADDRESS]: a listener at ADDRESS (default a socket file in
# the test's directory); sets SOCK and NOTES (the "PID LINE" it received).
start_listener() {
	SOCK=${1:-$BATS_TEST_TMPDIR/notify.sock}
	NOTES=$BATS_TEST_TMPDIR/notes
	bg_start listener "$TESTS_DIR/notify_listener.py" "$SOCK" "$NOTES"
	wait_for_file "$NOTES.ready"
}

# notes_flush: wait until every datagram sent so far is in NOTES (the
# listener writes them as it reads them, after redlock may have exited).
notes_flush() {
	local n=$((++NOTES_FLUSHES))
	python3 -c 'import socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(("FLUSH " + sys.argv[2]).encode(), "\0" + a[1:] if a.startswith("@") else a)' \
		"$SOCK" "$n"
	wait_for_file "$NOTES.flushed-$n"
}

# notes: every line received, without the pid.
notes() {
	notes_flush
	cut -d' ' -f2- "$NOTES"
}

# notes_of PID: the lines PID sent, without the pid.
notes_of() {
	notes_flush
	sed -n "s/^$1 //p" "$NOTES"
}

@test "a waited run reports the holder, extends its start timeout, then READY, the command and STOPPING" {
	start_listener
	hold_lock h name
	local hpid
	hpid=$(bg_pid h)
	bg_start w env NOTIFY_SOCKET="$SOCK" "$RL" -w 20s name true
	local wpid=$BG_PID
	wait_until grep -q EXTEND_TIMEOUT_USEC "$NOTES"
	release_lock h
	bg_wait w
	assert_equal "$BG_STATUS" 0
	# Every datagram came from redlock itself (systemd's NotifyAccess=main).
	notes_flush
	run -0 cut -d' ' -f1 "$NOTES"
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u)" "$wpid"
	run -0 notes_of "$wpid"
	assert_equal "${#lines[@]}" 5
	assert_line -n 0 --partial "STATUS=waiting for lock 'name': held by "
	assert_line -n 0 --partial "@$(uname -n) pid $hpid since "
	assert_line -n 0 --regexp ' since [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$'
	assert_line -n 1 EXTEND_TIMEOUT_USEC=30000000
	assert_line -n 2 READY=1
	assert_line -n 3 "STATUS=holding lock 'name', running true"
	assert_line -n 4 STOPPING=1
}

@test "a wait that runs out says where it waited and never READY" {
	start_listener
	hold_lock h name
	run -1 env NOTIFY_SOCKET="$SOCK" "$RL" -q -w 1s name true
	release_lock h
	run -0 notes
	assert_equal "${#lines[@]}" 2
	assert_line -n 0 --partial "STATUS=waiting for lock 'name': held by "
	assert_line -n 1 EXTEND_TIMEOUT_USEC=30000000
}

@test "a lock taken at once is READY, the command's status, then STOPPING; an abstract socket works" {
	start_listener "@redlock-test-$$-$BATS_TEST_NUMBER"
	run -0 env NOTIFY_SOCKET="$SOCK" "$RL" -s name sh -c 'exit 0'
	run -0 notes
	assert_equal "${#lines[@]}" 3
	assert_line -n 0 READY=1
	# The command's name, as the holder's record has it (--store-args).
	assert_line -n 1 "STATUS=holding lock 'name' shared, running sh"
	assert_line -n 2 STOPPING=1
}

@test "the command does not inherit NOTIFY_SOCKET, so a nested redlock tells systemd nothing" {
	start_listener
	run -0 --separate-stderr env NOTIFY_SOCKET="$SOCK" "$RL" outer sh -c \
		'echo "${NOTIFY_SOCKET-unset}"; redlock inner true'
	assert_output unset
	run -0 notes
	assert_equal "${#lines[@]}" 3
	assert_line -n 0 READY=1
	assert_line -n 1 "STATUS=holding lock 'outer', running sh"
	assert_line -n 2 STOPPING=1
}

@test "a name with a newline stays on one status line, escaped" {
	start_listener
	hold_lock h $'a\nb'
	bg_start w env NOTIFY_SOCKET="$SOCK" "$RL" -w 20s $'a\nb' true
	wait_until grep -q EXTEND_TIMEOUT_USEC "$NOTES"
	release_lock h
	bg_wait w
	assert_equal "$BG_STATUS" 0
	run -0 notes
	assert_equal "${#lines[@]}" 5
	assert_line -n 0 --partial "STATUS=waiting for lock 'a\\x0ab': held by "
	assert_line -n 3 "STATUS=holding lock 'a\\x0ab', running true"
}

@test "--respawn is READY once and STOPPING once, when it ends; between rounds STATUS says what it waits for" {
	start_listener
	local d=$BATS_TEST_TMPDIR
	bg_start r env NOTIFY_SOCKET="$SOCK" "$RL" --respawn name \
		/bin/sh -c 'echo run >>"$1/runs"' sh "$d"
	# Two rounds and the pause after the second (1 s, then 2 s): five
	# lines, as below.
	wait_until -t 10 _runs 2
	wait_until -t 10 _notes_at_least 5
	kill -TERM "$(bg_pid r)"
	bg_wait r 10
	assert_equal "$BG_STATUS" 143
	run -0 notes
	assert_equal "$(grep -c '^READY=1$' <<<"$output")" 1
	assert_equal "$(grep -c '^STOPPING=1$' <<<"$output")" 1
	assert_line -n 0 READY=1
	assert_line -n 1 "STATUS=holding lock 'name', running /bin/sh"
	assert_line -n 2 "STATUS=standby for lock 'name': round 1 ended with status 0; campaigning again in 1000 ms"
	assert_line -n 3 "STATUS=holding lock 'name', running /bin/sh"
	assert_line -n 4 "STATUS=standby for lock 'name': round 2 ended with status 0; campaigning again in 2000 ms"
	assert_line -n 5 STOPPING=1
	assert_equal "${#lines[@]}" 6
}
_runs() { (($({ wc -l <"$BATS_TEST_TMPDIR/runs"; } 2>/dev/null || echo 0) >= $1)); }
_notes_at_least() { (($(wc -l <"$NOTES") >= $1)); }

@test "a --respawn standby that waits again after READY sends no EXTEND_TIMEOUT_USEC, which would extend the active unit's RuntimeMaxSec" {
	start_listener
	local d=$BATS_TEST_TMPDIR rpid hpid
	bg_start r env NOTIFY_SOCKET="$SOCK" "$RL" --respawn name /bin/sh -c '
		echo run >>"$1/runs"; . "$TESTS_DIR/lib/await.sh"; await_file "$1/go"' sh "$d"
	rpid=$BG_PID
	wait_until -t 10 _runs 1
	# h waits behind round 1 and takes the lock when it ends, while the
	# standby pauses; the standby's round 2 then waits for h.
	bg_start h env NOTIFY_SOCKET="$SOCK" "$RL" -w 20s name /bin/sh -c '
		: >"$1/h.held"; . "$TESTS_DIR/lib/await.sh"; await_file "$1/h.release"' sh "$d"
	hpid=$BG_PID
	wait_until -t 10 _sent "$hpid" "STATUS=waiting for lock 'name'"
	: >"$d/go"
	wait_for_file "$d/h.held" 10
	wait_until -t 10 _sent "$rpid" "STATUS=waiting for lock 'name'"
	kill -TERM "$(bg_pid r)"
	bg_wait r 10
	assert_equal "$BG_STATUS" 143
	release_lock h
	assert_equal "$BG_STATUS" 0
	run -0 notes_of "$rpid"
	assert_line -n 0 READY=1
	refute_line --partial EXTEND_TIMEOUT_USEC
	assert_line --partial "STATUS=waiting for lock 'name': held by "
	# The waiter that was never READY extends its start timeout.
	run -0 notes_of "$hpid"
	assert_line EXTEND_TIMEOUT_USEC=30000000
}
# _sent PID PREFIX: PID sent a line that starts with PREFIX.
_sent() { notes_of "$1" | grep -qF -- "$2"; }

@test "an address that is not a unix socket's is ignored and the command runs" {
	run -0 --separate-stderr env NOTIFY_SOCKET=vsock:2:1234 "$RL" -v name \
		sh -c 'echo "${NOTIFY_SOCKET-unset}"'
	assert_output unset
	assert_regex "$stderr" 'redlock: not notifying systemd: cannot use NOTIFY_SOCKET'
}

# redlock(1), "Under systemd": a notification never holds the run up.
@test "a listener that does not read (its queue full) holds nothing up: the lock is renewed, the command's status comes back, one warning" {
	local s=$BATS_TEST_TMPDIR/stuck.sock
	bg_start stuck "$TESTS_DIR/notify_listener.py" "$s" "$BATS_TEST_TMPDIR/stuck" --stuck
	wait_for_file "$BATS_TEST_TMPDIR/stuck.ready"
	run -0 --separate-stderr timeout 20 env NOTIFY_SOCKET="$s" "$RL" -t 1s \
		name sh -c 'sleep 1.5; exit 0'
	assert_equal "$(grep -c 'cannot notify systemd' <<<"$stderr")" 1
	# Waiting too: -w ends the wait on time.
	run -0 redlock acquire -t 30s name
	run -1 timeout 20 env NOTIFY_SOCKET="$s" "$RL" -q -w 300ms name true
}

@test "the shipped timer and service pass systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	local d=$BATS_TEST_TMPDIR/units u
	mkdir -p "$d"
	# An instance of each template, running the binary under test.
	for u in service timer; do
		sed "s|/usr/bin/redlock|$REDLOCK_BIN_UNDER_TEST|" \
			"$REPO_DIR/systemd/redlock-job@.$u" >"$d/redlock-job@tick.$u"
	done
	run -0 --separate-stderr systemd-analyze verify --man=no \
		"$d/redlock-job@tick.service" "$d/redlock-job@tick.timer"
	assert_equal "$stderr" ''
}
