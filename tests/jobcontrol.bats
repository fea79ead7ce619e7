#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Job control (redlock(1), EXIT STATUS; redlock(1), "Running a command under the lock"), typed into an
# interactive bash in a tmux(1) pane: Ctrl-Z suspends redlock and the
# command together and gives the prompt back, fg and bg resume them,
# Ctrl-C stops them and releases, SIGTERM to a suspended job or closing
# the terminal ends it, and a suspended job whose lease lapsed runs again
# only while it holds the lock.  flock(1) typed into the same pane is the
# reference wherever it has one: each such scenario runs with flock first
# (which checks the harness) and then with redlock.
#
# The typed commands record what they do in files under $D (the test's
# directory): pids, exit statuses, the output of `jobs`.  States are
# waited for, never slept for: "the prompt is back" is "the shell's
# terminal foreground process group is the shell's own".  Each wait has
# 20 s (scaled by REDLOCK_TEST_SLOW): a state that comes at all comes in
# well under a second, but a keystroke goes through tmux and bash on a
# machine that the suite's other files keep busy (a sanitizer build's
# prompt once took over 5 s there), and waiting longer costs nothing
# when the state comes.

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	command -v tmux >/dev/null || skip "tmux is not installed"
}
test_setup() {
	command -v tmux >/dev/null || skip "tmux is not installed"
	D=$BATS_TEST_TMPDIR
	tm_start
}
test_teardown() {
	tm_stop
}

# --- the terminal -----------------------------------------------------------

# tm ARGS...: tmux on this test's private server.
tm() {
	env -u TMUX tmux -f /dev/null -S "$TM_SOCK" "$@" 3>&- </dev/null
}

# tm_start: a tmux server with one pane running an interactive bash that
# knows $D, redlock (on PATH) and the server (REDLOCK_URL); returns at
# its first prompt.  Sets SHELL_PID.
tm_start() {
	TM_SOCK=$D/tmux.sock
	# Every signal at its default, as in a login session (bats may run
	# tests with SIGINT ignored, and an ignored signal is inherited).
	tm new-session -d -x 200 -y 50 -- env -i --default-signal \
		PATH="$PATH" HOME="$D" TERM=screen \
		D="$D" TESTS_DIR="$TESTS_DIR" REDLOCK_URL="$REDLOCK_URL" PS1='PROMPT$ ' \
		bash --norc --noprofile -i
	SHELL_PID=$(tm display-message -p '#{pane_pid}')
	TM_SERVER_PID=$(tm display-message -p '#{pid}')
	echo "$SHELL_PID" >>"$D/shell.pids"
	wait_until -t 20 prompt_back
	# The shell prints what it did to files, not to the screen.
	tm_type 'set +o histexpand'
	wait_until -t 20 prompt_back
}

# tm_stop: ends the tmux server and every process still in the shell's
# session (whatever a failed test left behind, stopped or not).
tm_stop() {
	[[ -n ${TM_SOCK:-} ]] || return 0
	tm kill-server 2>/dev/null
	[[ -n ${TM_SERVER_PID:-} ]] && wait_until -t 20 pid_dead "$TM_SERVER_PID" 2>/dev/null
	local p
	if [[ -f $D/shell.pids ]]; then
		while read -r p; do
			_kill_session "$p"
		done <"$D/shell.pids"
	fi
	return 0
}

# tm_type TEXT: types TEXT and Enter into the pane.
tm_type() {
	tm send-keys -t 0 -l -- "$1"
	tm send-keys -t 0 Enter
}

# tm_keys KEY...: sends keys (C-z, C-c) to the pane.
tm_keys() {
	tm send-keys -t 0 "$@"
}

# stat_field PID N: field N after the command name of /proc/PID/stat
# (1 state, 2 ppid, 3 pgrp, 4 session, 5 tty, 6 tpgid).
stat_field() {
	local stat rest
	stat=$(<"/proc/$1/stat") 2>/dev/null || return 1
	rest=${stat##*) }
	read -r -a f <<<"$rest"
	echo "${f[$(($2 - 1))]}"
}

# prompt_back: the shell has the terminal again (its foreground process
# group is the shell's), and it is waiting at its prompt.
prompt_back() {
	[[ $(stat_field "$SHELL_PID" 6) == "$SHELL_PID" ]] || return 1
	tm capture-pane -p -t 0 | grep -v '^$' | tail -n 1 | grep -q 'PROMPT\$ *$'
}

stopped() { [[ $(stat_field "$1" 1) == T ]]; }

# command_stopped PID: PID is stopped, or it waits in vfork(2) (state D)
# for a child that the same Ctrl-Z stopped before its exec (dash starts
# the `sleep` of await_file that way), which is as stopped as it gets.
command_stopped() {
	stopped "$1" && return 0
	[[ $(stat_field "$1" 1) == D ]] || return 1
	local -a kids=()
	read -r -a kids < <(cat /proc/"$1"/task/*/children 2>/dev/null)
	local c
	for c in "${kids[@]}"; do
		stopped "$c" && return 0
	done
	return 1
}
not_stopped() { pid_alive "$1" && ! stopped "$1"; }

# tm_run LINE: types LINE and waits until the prompt is back.
tm_run() {
	tm_type "$1"
	wait_until -t 20 prompt_back
}

# screen: the pane's text (for failure messages).
screen() { tm capture-pane -p -t 0 | grep -v '^$' | tail -n 15; }

# --- the commands typed -------------------------------------------------------

# TOOL for each run: flock on a file, or redlock on a name.
flock_tool() { echo "flock $D/lockfile"; }

# A command that records its pid (c.pid) and token, then runs until $D/go
# exists (at most 30 s), then exits 0 after writing "finished".  The
# commands that poll run under bash, which forks its sleep(1): dash
# vforks it, and a Ctrl-Z that stops the child between its vfork and
# its exec leaves dash waiting (state D) where it cannot stop, so the
# job never shows stopped through redlock (flock, in the job's own
# process group, stops anyway).  redlock(1) says so under BUGS.
WAIT_GO='echo $$ >"$D/c.pid"; echo "${REDLOCK_TOKEN:-}" >"$D/c.token"; . "$TESTS_DIR/lib/await.sh"; await_file "$D/go" 30; echo finished >"$D/finished"'

# start_waiting TOOL: types `TOOL bash -c WAIT_GO` and waits until the
# command runs; sets CHILD and TOOL_PID (its parent: flock or redlock).
start_waiting() {
	rm -f "$D"/{c.pid,c.token,go,finished,rc,jobs}
	tm_type "$1 bash -c '$WAIT_GO'"
	wait_until -t 20 test -s "$D/c.pid" || {
		echo "the command never ran; screen:" >&2
		screen >&2
		return 1
	}
	CHILD=$(cat "$D/c.pid")
	TOOL_PID=$(stat_field "$CHILD" 2)
}

# suspend_job: Ctrl-Z; the prompt must come back with the tool and its
# command stopped, and `jobs` must say Stopped.
suspend_job() {
	tm_keys C-z
	wait_until -t 20 prompt_back || fail "Ctrl-Z: the prompt did not come back; screen: $(screen)"
	# The prompt is back once the tool stopped; its command may still be
	# on its way (state D or S for a moment).
	wait_until -t 20 command_stopped "$CHILD" || fail "Ctrl-Z: the command (pid $CHILD) is not stopped: state $(stat_field "$CHILD" 1)"
	wait_until -t 20 stopped "$TOOL_PID" || fail "Ctrl-Z: pid $TOOL_PID (the parent of the command) is not stopped: state $(stat_field "$TOOL_PID" 1)"
	tm_run 'jobs >"$D/jobs"'
	grep -q 'Stopped' "$D/jobs" || fail "jobs says: $(cat "$D/jobs")"
}

# rc_is N: the exit status the shell wrote to $D/rc is N.
rc_is() {
	wait_until -t 20 test -s "$D/rc" || fail "no exit status written; screen: $(screen)"
	assert_equal "$(cat "$D/rc")" "rc=$1"
}

# --- the scenarios, for either tool -------------------------------------------

ctrl_z_then_fg() {
	start_waiting "$1"
	suspend_job
	tm_type 'fg; echo "rc=$?" >"$D/rc"'
	wait_until -t 20 not_stopped "$CHILD" || fail "fg: the command stays stopped"
	wait_until -t 20 not_stopped "$TOOL_PID" || fail "fg: pid $TOOL_PID stays stopped"
	assert [ ! -e "$D/finished" ]
	: >"$D/go"
	rc_is 0
	assert_equal "$(cat "$D/finished")" finished
	wait_until -t 20 prompt_back
}

ctrl_z_then_bg() {
	start_waiting "$1"
	suspend_job
	tm_run 'bg'
	wait_until -t 20 not_stopped "$CHILD" || fail "bg: the command stays stopped"
	wait_until -t 20 not_stopped "$TOOL_PID" || fail "bg: pid $TOOL_PID stays stopped"
	# The shell keeps its prompt while the job runs in the background.
	assert prompt_back
	: >"$D/go"
	wait_for_file "$D/finished" 10
	tm_run 'wait %1; echo "rc=$?" >"$D/rc"'
	rc_is 0
}

ctrl_c_in_foreground() {
	rm -f "$D"/{c.pid,rc}
	tm_type "$1 sh -c 'echo \$\$ >\"\$D/c.pid\"; sleep 30'"
	wait_until -t 20 test -s "$D/c.pid"
	local child
	child=$(cat "$D/c.pid")
	tm_keys C-c
	wait_until -t 20 prompt_back || fail "Ctrl-C: no prompt; screen: $(screen)"
	# (Typed after the prompt: Ctrl-C ends the whole line typed before.)
	tm_type 'echo "rc=$?" >"$D/rc"'
	rc_is 130
	assert wait_for_exit "$child" 20
}

# ctrl_c_in_loop TOOL: Ctrl-C while the first of three iterations runs
# (each would run 30 s: the keystroke comes while the first runs, however
# loaded the machine); then `echo after` is typed.  Sets ITERS to what
# the loop got to run.
ctrl_c_in_loop() {
	rm -f "$D"/{started,iters}
	tm_type "for f in a b c; do echo \$f >>\"\$D/iters\"; $1 sh -c ': >\"\$D/started\"; sleep 30'; done"
	wait_for_file "$D/started" 10
	tm_keys C-c
	# Typed at once: runs when the shell reads its next line, i.e. after
	# the loop if it went on.
	tm_type 'echo after >>"$D/iters"'
	wait_until -t 20 grep -q after "$D/iters" || fail "screen: $(screen)"
	ITERS=$(tr '\n' ' ' <"$D/iters")
}

# reads_tty_in_background TOOL: a background job that reads the terminal
# is stopped (tty input) with the prompt kept; fg lets it read.
reads_tty_in_background() {
	rm -f "$D"/{c.pid,got,rc,jobs}
	tm_type "$1 sh -c 'echo \$\$ >\"\$D/c.pid\"; read x; echo \"got \$x\" >\"\$D/got\"' &"
	wait_until -t 20 test -s "$D/c.pid"
	CHILD=$(cat "$D/c.pid")
	wait_until -t 20 command_stopped "$CHILD" || fail "the reading command is not stopped: state $(stat_field "$CHILD" 1); screen: $(screen)"
	wait_until -t 20 prompt_back || fail "no prompt; screen: $(screen)"
	tm_run 'jobs >"$D/jobs"'
	grep -q 'Stopped' "$D/jobs" || fail "jobs says: $(cat "$D/jobs")"
	tm_type 'fg; echo "rc=$?" >"$D/rc"'
	wait_until -t 20 not_stopped "$CHILD" || fail "fg: the command stays stopped"
	tm_type 'hello'
	rc_is 0
	assert_equal "$(cat "$D/got")" 'got hello'
}

# tstp_to_background_job TOOL: `TOOL bash -c WAIT_GO &`, then `kill -TSTP
# %1`, which goes to the job's process group, the tool's (redlock's
# command has a group of its own): the tool and its command stop, jobs
# says Stopped, and bg resumes both to exit 0.
tstp_to_background_job() {
	rm -f "$D"/{c.pid,c.token,go,finished,rc,jobs}
	tm_type "$1 bash -c '$WAIT_GO' &"
	wait_until -t 20 test -s "$D/c.pid" || fail "the command never ran; screen: $(screen)"
	CHILD=$(cat "$D/c.pid")
	TOOL_PID=$(stat_field "$CHILD" 2)
	wait_until -t 20 prompt_back
	tm_run 'kill -TSTP %1'
	wait_until -t 20 command_stopped "$CHILD" || fail "kill -TSTP %1: the command (pid $CHILD) is not stopped: state $(stat_field "$CHILD" 1)"
	wait_until -t 20 stopped "$TOOL_PID" || fail "kill -TSTP %1: pid $TOOL_PID is not stopped: state $(stat_field "$TOOL_PID" 1)"
	tm_run 'jobs >"$D/jobs"'
	grep -q 'Stopped' "$D/jobs" || fail "jobs says: $(cat "$D/jobs")"
	tm_run 'bg'
	wait_until -t 20 not_stopped "$CHILD" || fail "bg: the command stays stopped"
	wait_until -t 20 not_stopped "$TOOL_PID" || fail "bg: pid $TOOL_PID stays stopped"
	: >"$D/go"
	wait_for_file "$D/finished" 10
	tm_run 'wait %1; echo "rc=$?" >"$D/rc"'
	rc_is 0
}

# --- flock and redlock --------------------------------------------------------

@test "Ctrl-Z on 'redlock NAME cmd' gives the prompt back with the job Stopped, and fg resumes it to exit 0, as with flock" {
	ctrl_z_then_fg "$(flock_tool)"
	ctrl_z_then_fg "redlock jz"
	assert key_absent redlock:jz
}

@test "bg resumes a job suspended with Ctrl-Z in the background, as with flock" {
	ctrl_z_then_bg "$(flock_tool)"
	ctrl_z_then_bg "redlock jb"
	assert key_absent redlock:jb
}

@test "kill -TSTP %1 stops a background 'redlock NAME cmd' and its command together, and bg resumes both, as with flock" {
	tstp_to_background_job "$(flock_tool)"
	tstp_to_background_job "redlock jt"
	assert key_absent redlock:jt
}

@test "Ctrl-C on a foreground 'redlock NAME cmd' stops the command, exit 130, and releases, as with flock" {
	ctrl_c_in_foreground "$(flock_tool)"
	ctrl_c_in_foreground "redlock jc"
	assert key_absent redlock:jc
}

@test "Ctrl-C in a for loop typed at the prompt stops the whole loop, as with flock" {
	ctrl_c_in_loop "$(flock_tool)"
	assert_equal "$ITERS" 'a after '
	ctrl_c_in_loop "redlock jl"
	assert_equal "$ITERS" 'a after '
	assert key_absent redlock:jl
}

@test "a background job that reads the terminal stops with the prompt kept, and fg lets it read, as with flock" {
	reads_tty_in_background "$(flock_tool)"
	reads_tty_in_background "redlock jr"
	assert key_absent redlock:jr
}

@test "the lock stays held while the job is suspended within its TTL, with the same token after fg" {
	start_waiting "redlock jh"
	local token
	token=$(cat "$D/c.token")
	suspend_job
	assert_equal "$(rcli GET redlock:jh)" "$token"
	tm_type 'fg; echo "rc=$?" >"$D/rc"'
	wait_until -t 20 not_stopped "$CHILD"
	assert_equal "$(rcli GET redlock:jh)" "$token"
	: >"$D/go"
	rc_is 0
	assert key_absent redlock:jh
}

@test "SIGTERM to a suspended redlock ends the job: the command is continued so it can die, and the lock is released" {
	start_waiting "redlock jt"
	suspend_job
	kill -TERM "$TOOL_PID"
	wait_until -t 20 pid_dead "$CHILD" || fail "the suspended command is still there: state $(stat_field "$CHILD" 1)"
	wait_until -t 20 pid_dead "$TOOL_PID" || fail "redlock is still there: state $(stat_field "$TOOL_PID" 1)"
	assert [ ! -e "$D/finished" ]
	wait_for_no_key redlock:jt 20
}

@test "closing the terminal ends a foreground 'redlock NAME cmd' and releases the lock" {
	start_waiting "redlock jk"
	tm kill-server
	wait_until -t 20 pid_dead "$CHILD" || fail "the command survived the terminal"
	wait_until -t 20 pid_dead "$TOOL_PID" || fail "redlock survived the terminal"
	wait_for_no_key redlock:jk 20
}

@test "closing the terminal ends a suspended 'redlock NAME cmd' and releases the lock" {
	start_waiting "redlock js"
	suspend_job
	tm kill-server
	wait_until -t 20 pid_dead "$CHILD" || fail "the suspended command survived the terminal: state $(stat_field "$CHILD" 1)"
	wait_until -t 20 pid_dead "$TOOL_PID" || fail "redlock survived the terminal: state $(stat_field "$TOOL_PID" 1)"
	wait_for_no_key redlock:js 20
}

# A command that appends a line to $D/ticks every 50 ms until $D/go.
TICKING='echo $$ >"$D/c.pid"; echo "$REDLOCK_TOKEN" >"$D/c.token"; i=0; while [ ! -e "$D/go" ] && [ $i -lt 600 ]; do echo $i >>"$D/ticks"; sleep 0.05; i=$((i+1)); done; echo finished >"$D/finished"'

# start_ticking TTL NAME: types `redlock -t TTL NAME` running $TICKING
# and returns once the command runs; sets CHILD and TOOL_PID.
start_ticking() {
	rm -f "$D"/{ticks,c.pid,rc}
	tm_type "redlock -t $1 $2 bash -c '$TICKING'"
	wait_until -t 20 test -s "$D/c.pid"
	CHILD=$(cat "$D/c.pid")
	TOOL_PID=$(stat_field "$CHILD" 2)
}

# fg_running: types fg (its status goes to $D/rc) and waits until the
# command runs again.
fg_running() {
	tm_type 'fg; echo "rc=$?" >"$D/rc"'
	wait_until -t 20 not_stopped "$CHILD" || fail "fg: the command stays stopped; screen: $(screen)"
}

@test "a suspended job whose lease lapsed and was taken by another holder: on fg the command ends without running again and redlock exits 75" {
	start_ticking 1s jx
	wait_until -t 20 test -s "$D/ticks"
	suspend_job
	# Suspended, redlock renews nothing: the key expires, another holder
	# takes the lock.
	wait_for_no_key redlock:jx 20
	run -0 --separate-stderr redlock acquire -t 1m jx
	local other=$output ticks
	ticks=$(wc -l <"$D/ticks")
	tm_type 'fg; echo "rc=$?" >"$D/rc"'
	rc_is 75
	assert pid_dead "$CHILD"
	assert [ ! -e "$D/finished" ]
	assert_equal "$(wc -l <"$D/ticks")" "$ticks"
	# The other holder's lock is untouched.
	assert_equal "$(rcli GET redlock:jx)" "$other"
}

# threads_over N PID: PID has more than N threads.
threads_over() {
	local t
	t=$(find "/proc/$2/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	((t > $1))
}

@test "a job suspended before its first renewal renews from one thread after fg, not two" {
	# The first renewal is due 2 s after the start: suspended and
	# continued before that, redlock must not start a second renewal
	# thread then (two threads on one connection corrupt it).
	start_ticking 6s jz
	suspend_job
	fg_running
	stays_false -t 3 threads_over 2 "$TOOL_PID"
	: >"$D/go"
	rc_is 0
	assert key_absent redlock:jz
}

@test "a suspended job whose lease lapsed with nobody taking the lock: on fg it holds the lock again with its token and exits 0" {
	start_ticking 1s jy
	local token
	token=$(cat "$D/c.token")
	suspend_job
	wait_for_no_key redlock:jy 20
	fg_running
	wait_until -t 20 eval '[[ $(rcli GET redlock:jy) == "$token" ]]' ||
		fail "after fg the lock is not held with the job's token: '$(rcli GET redlock:jy)'"
	# Held for longer than the TTL again: renewed.
	stays_false -t 1.5 key_absent redlock:jy
	: >"$D/go"
	rc_is 0
	assert_equal "$(cat "$D/finished")" finished
	assert key_absent redlock:jy
}
