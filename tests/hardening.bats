#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Findings of the probe of the first release (SPEC §2-§6): signals the
# caller ignored, dying of the command's signal, commands that leave
# their process group, a busy quorum with a server down, closed standard
# descriptors, undelivered tokens, the same server twice, hostile holder
# metadata, -w precision.  Each test fails on the first release.

load helpers
load fault_helpers

setup_file() {
	common_setup_file
	start_redis main --tcp
	use_redis main
}
teardown_file() { common_teardown_file; }
setup() {
	common_setup
	oracle_init
}
teardown() { common_teardown; }

# sig_ignored PID SIG: the process has SIG (a number) ignored.
sig_ignored() {
	local mask
	mask=$(awk '/^SigIgn:/ { print $2 }' "/proc/$1/status")
	(((0x$mask >> ($2 - 1)) & 1))
}

@test "nohup redlock NAME cmd: a hangup to redlock leaves the command running, as with nohup flock" {
	local d=$BATS_TEST_TMPDIR
	bg_start h nohup "$RL" hup sh -c 'echo $$ >"$1"; : >"$2"; i=0
		while [ ! -e "$3" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
		echo survived' hup "$d/child" "$d/held" "$d/release"
	wait_for_file "$d/held"
	kill -HUP "$(bg_pid h)"
	assert sig_ignored "$(cat "$d/child")" 1
	assert stays_false -t 0.5 pid_dead "$(bg_pid h)"
	: >"$d/release"
	bg_wait h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:hup
}

@test "SIGINT ignored by the caller (trap '' INT) stays ignored in redlock and in the command" {
	local d=$BATS_TEST_TMPDIR
	bg_start h sh -c 'trap "" INT; exec "$0" "$@"' "$RL" ign sh -c \
		'echo $$ >"$1"; : >"$2"; i=0
		while [ ! -e "$3" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' \
		ign "$d/child" "$d/held" "$d/release"
	wait_for_file "$d/held"
	assert sig_ignored "$(cat "$d/child")" 2
	kill -INT "$(bg_pid h)"
	assert stays_false -t 0.5 pid_dead "$(cat "$d/child")"
	: >"$d/release"
	bg_wait h
	assert_equal "$BG_STATUS" 0
}

@test "a signal not ignored at start is still forwarded" {
	local d=$BATS_TEST_TMPDIR
	bg_start h sh -c 'trap "" HUP; exec "$0" "$@"' "$RL" fwd sh -c \
		'trap "exit 7" TERM; : >"$1"; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' \
		fwd "$d/held"
	wait_for_file "$d/held"
	kill -TERM "$(bg_pid h)"
	bg_wait h
	assert_equal "$BG_STATUS" 7
}

@test "a command killed by a signal makes redlock die of that signal after releasing" {
	run -0 python3 -c '
import subprocess, sys
p = subprocess.run([sys.argv[1], "die", "sh", "-c", "kill -TERM $$"])
print(p.returncode)' "$RL"
	assert_output -- -15
	assert key_absent redlock:die
	run bash -c '"$RL" die sh -c "kill -TERM \$\$"; echo "status=$?"'
	assert_output --partial 'status=143'
}

@test "a command's own status 75 or --max-time's 124 stays an exit status" {
	run -0 python3 -c '
import subprocess, sys
p = subprocess.run([sys.argv[1], "-q", "--max-time", "200ms", "mt", "sleep", "5"])
print(p.returncode)' "$RL"
	assert_output 124
}

@test "a process that left the command's process group dies with a lost lock before the next holder starts" {
	local d=$BATS_TEST_TMPDIR
	guarded_bg h -t 1500ms tree
	wait_for_file "$d/h.held" 20
	# timeout(1) and setsid put their children in groups of their own.
	bg_start esc "$RL" run -t 1500ms other true
	run -0 redlock break tree
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	assert pid_dead "$(cat "$d/h.gchild")"
}

@test "setsid and timeout(1) children are stopped on loss and when redlock is SIGKILLed" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 1500ms esc sh -c '
		setsid sh -c "echo \$\$ >$0/setsid.pid; exec sleep 30" &
		timeout 30 sh -c "echo \$\$ >$0/timeout.pid; exec sleep 30" &
		: >"$0/held"; wait' "$d"
	wait_for_file "$d/setsid.pid"
	wait_for_file "$d/timeout.pid"
	wait_for_file "$d/held"
	run -0 redlock break esc
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$(cat "$d/setsid.pid")" 5
	assert wait_for_exit "$(cat "$d/timeout.pid")" 5
	rm -f "$d"/*.pid "$d/held"
	bg_start k "$RL" -t 1500ms esc2 sh -c '
		setsid sh -c "echo \$\$ >$0/setsid.pid; exec sleep 30" &
		sleep 0.1; : >"$0/held"; wait' "$d"
	wait_for_file "$d/held"
	wait_for_file "$d/setsid.pid"
	# Past the guard's start, then SIGKILL redlock.
	sleep 0.1
	kill -KILL "$(bg_pid k)"
	assert wait_for_exit "$(cat "$d/setsid.pid")" 5
}

@test "a process that left the group holds the lock until it ends, like a background job" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" bgtree sh -c 'setsid sh -c "echo \$\$ >$0/s.pid; sleep 1" & : >"$0/held"' "$d"
	wait_for_file "$d/held"
	wait_for_file "$d/s.pid"
	run -1 redlock -n bgtree true
	bg_wait h 10
	assert_equal "$BG_STATUS" 0
	assert pid_dead "$(cat "$d/s.pid")"
	assert key_absent redlock:bgtree
}

# quorum_servers N: N more servers q1..qN.
quorum_up() {
	local i
	QARGS=()
	for ((i = 1; i <= $1; i++)); do
		[[ -d $(_redis_dir "q$i") ]] || start_redis "q$i"
		rcli_at "q$i" FLUSHALL >/dev/null
		QARGS+=(-u "unix://$(redis_sock "q$i")")
	done
}

@test "a busy quorum with one server down is the conflict status, never 69" {
	quorum_up 2
	local dead try
	dead=$(free_port)
	hold_lock h "${QARGS[@]}" -u "redis://127.0.0.1:$dead" qbusy
	for try in {1..20}; do
		run --separate-stderr redlock "${QARGS[@]}" -u "redis://127.0.0.1:$dead" -n qbusy true
		[[ $status == 1 ]] || fail "try $try: status $status: $stderr"
		[[ $stderr != *"no reply needed"* ]] || fail "try $try: $stderr"
	done
	release_lock h
}

@test "a busy quorum of four servers, all up, is the conflict status every time" {
	quorum_up 4
	local try
	hold_lock h "${QARGS[@]}" qbusy4
	for try in {1..20}; do
		run --separate-stderr redlock "${QARGS[@]}" -n qbusy4 true
		[[ $status == 1 ]] || fail "try $try: status $status: $stderr"
	done
	release_lock h
}

@test "the same server twice, or by two names, is a usage error and writes nothing" {
	local u p
	u=unix://$(redis_sock main)
	p=$(redis_port main)
	rcli CONFIG RESETSTAT >/dev/null
	run -64 --separate-stderr redlock -u "redis://127.0.0.1:$p" -u "redis://localhost:$p" -u "$u" same true
	assert_output ''
	assert_regex "$stderr" 'same server'
	[[ $(rcli INFO commandstats) != *cmdstat_eval* ]] || fail "a script ran"
	assert key_absent redlock:same
}

@test "closed standard descriptors: diagnostics never become signals and the command runs" {
	run -0 bash -c '"$RL" -v -t 300ms fds sleep 0.5 <&- 2>&-; echo "status=$?"'
	assert_output --partial 'status=0'
	run -0 bash -c '"$RL" -v fds2 sh -c "echo out" <&- 2>&-'
	assert_output out
	run -0 bash -c 'tok=$("$RL" acquire fds3 <&- 2>&-) && "$RL" release fds3 "$tok" <&- 2>&-'
}

@test "the command finds closed descriptors closed" {
	run -0 bash -c '"$RL" fds4 sh -c "test -e /proc/self/fd/0 && echo open || echo closed" <&-'
	assert_output closed
}

@test "acquire whose token cannot be written releases the lock and exits 74" {
	run -74 bash -c '"$RL" acquire -t 1h full >/dev/full'
	assert key_absent redlock:full
	run -74 bash -c '"$RL" acquire -t 1h closed >&-'
	assert key_absent redlock:closed
	run -74 bash -c '"$RL" acquire --env -t 1h fullenv >/dev/full'
	assert key_absent redlock:fullenv
}

@test "status and list escape a holder's user and host" {
	local tok
	tok=$(USER=$'ev\nil\e[31m' redlock acquire -t 1m hostile)
	# The holder's record: its third NUL-led field is the host.
	rcli EVAL "local k = KEYS[1] .. string.char(0) .. 'holder'
		local i = 0
		local m = string.gsub(redis.call('GET', k), '%z[^%z]*', function(s)
			i = i + 1
			if i == 3 then return string.char(0) .. ARGV[1] end
		end)
		return redis.call('SET', k, m, 'KEEPTTL')" \
		1 '{redlock:hostile}' $'h\e]0;x\a' >/dev/null
	run -0 redlock status hostile
	[[ $output != *$'\e'* ]] || fail "escape sequence in status: $output"
	assert_output --partial 'ev\x0ail\x1b[31m@h\x1b]0;x\x07'
	run -0 redlock list
	assert_equal "${#lines[@]}" 1
	[[ $output != *$'\e'* ]] || fail "escape sequence in list"
	run -0 redlock list --json
	run -0 python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin]' <<<"$output"
	redlock release hostile "$tok"
}

@test "-w 100ms against a held lock gives up within a few milliseconds of 100ms" {
	hold_lock h prec
	local t0 t1 best=100000 try
	for try in 1 2 3 4 5; do
		t0=$(now_ms)
		run -1 redlock -w 100ms prec true
		t1=$(now_ms)
		(((t1 - t0) < best)) && best=$((t1 - t0))
	done
	((best >= 100)) || fail "gave up after $best ms"
	((best < $(scale_ms 160))) || fail "gave up after $best ms, not near 100"
	release_lock h
}
