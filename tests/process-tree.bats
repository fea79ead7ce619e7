#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The command is the whole process tree it started (redlock(1), "Running a command under the lock"
# item 1): also the processes that left its process group or session
# (timeout(1), setsid, a double-forked daemon that ignores SIGTERM).
# Whenever redlock stops the command - the lock lost (broken, or no longer
# renewable), --max-time, a forwarded SIGTERM, redlock itself SIGKILLed
# (then the guard) - every one of them is dead before the next holder can
# get the lock.  The kernel is the judge: every process of a holder's tree
# inherits the flock(1) oracle of fault_helpers.bash, and a next holder
# that gets the Redis lock while any of them lives exits 99.

load helpers
load fault_helpers
lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
test_teardown() {
	kill_escapees
}

# The command of an escaping holder ($1 directory, $2 tag): records its
# start (TAG.start) and pid, then starts three processes that escape its
# process group: `timeout 20 sleep 30` (a group of its own), `setsid sleep
# 30` (a session of its own) and a daemon (a sleep in a new session that
# ignores SIGTERM, SIGHUP and SIGINT, whose parent has exited).  Their pids
# go to TAG.escaped, the ids of their groups and sessions to TAG.ids (for
# teardown).  Says TAG.held once all three are recorded, then waits.
ESCAPING_BODY='
	d=$1 t=$2
	date +%s%3N >"$d/$t.start"
	echo $$ >"$d/$t.child"
	timeout 20 sleep 30 &
	echo $! >>"$d/$t.escaped"
	echo $! >>"$d/$t.ids"
	setsid sleep 30 &
	echo $! >>"$d/$t.escaped"
	echo $! >>"$d/$t.ids"
	setsid sh -c "trap \"\" TERM HUP INT; sleep 30 & echo \$! >>\"\$1\"" daemon "$d/$t.escaped" &
	echo $! >>"$d/$t.ids"
	i=0
	while [ "$(wc -l <"$d/$t.escaped")" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.02; i=$((i + 1)); done
	: >"$d/$t.held"
	wait'

# start_escaping TAG [REDLOCK-OPTION...] NAME: a guarded holder (see
# fault_helpers.bash) whose command is ESCAPING_BODY; returns once its
# command runs and the escaped processes were seen running (checked
# first, since a --max-time ends them), with ESCAPED set to their pids
# (timeout's sleep included) and watch_free TAG started.
start_escaping() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	shift
	rm -f "$d/$tag".{held,start,child,escaped,freed,watching}
	: >"$d/$tag.alive"
	: >"$d/$tag.escaped"
	bg_start "$tag" "$RL" "$@" flock -n -E 99 "$ORACLE" \
		flock "$d/$tag.alive" /bin/sh -c "$ESCAPING_BODY" escaping "$d" "$tag"
	wait_for_file "$d/$tag.held" 20 || {
		echo "start_escaping $tag: not held; stderr: $(bg_err "$tag")" >&2
		return 1
	}
	mapfile -t ESCAPED <"$d/$tag.escaped"
	local t
	t=$(head -n 1 "$d/$tag.escaped")
	wait_until -t 5 has_child "$t"
	ESCAPED+=("$(children_of "$t")")
	((${#ESCAPED[@]} == 4)) || {
		echo "start_escaping $tag: escaped: ${ESCAPED[*]}" >&2
		return 1
	}
	local p
	for p in "${ESCAPED[@]}"; do
		pid_alive "$p" || {
			echo "start_escaping $tag: $p is not running" >&2
			return 1
		}
	done
	# They did escape: other process groups, other sessions.
	assert_not_equal "$(stat_field "${ESCAPED[0]}" 3)" "$(stat_field "$(cat "$d/$tag.child")" 3)"
	assert_not_equal "$(stat_field "${ESCAPED[1]}" 4)" "$(stat_field "$(cat "$d/$tag.child")" 4)"
	assert_not_equal "$(stat_field "${ESCAPED[2]}" 4)" "$(stat_field "$(cat "$d/$tag.child")" 4)"
	watch_free "$tag"
}

# stat_field PID N: field N after the command name of /proc/PID/stat
# (1 state, 2 ppid, 3 pgrp, 4 session).
stat_field() {
	local stat rest
	stat=$(<"/proc/$1/stat") || return 1
	rest=${stat##*) }
	read -r -a f <<<"$rest"
	echo "${f[$(($2 - 1))]}"
}

# children_of PID: the pids whose parent is PID.
children_of() {
	local f stat rest pp
	for f in /proc/[0-9]*/stat; do
		{ read -r stat <"$f"; } 2>/dev/null || continue
		rest=${stat##*) }
		read -r _ pp _ <<<"$rest"
		if [[ $pp == "$1" ]]; then
			f=${f#/proc/}
			echo "${f%/stat}"
		fi
	done
}
has_child() { [[ -n $(children_of "$1") ]]; }

# escapees_alive: the escaped processes still running.
escapees_alive() {
	local p out=''
	for p in "${ESCAPED[@]}"; do
		pid_alive "$p" && out+="$p "
	done
	echo "$out"
}

# assert_escapees_dead WHEN: every escaped process is gone now.
assert_escapees_dead() {
	local left
	left=$(escapees_alive)
	left=${left% }
	[[ -z $left ]] || fail "escaped processes still alive $1: $(ps -o pid=,pgid=,sid=,args= -p "${left// /,}" 2>/dev/null | tr -s ' \n' ' ;')"
}

# kill_escapees: SIGKILL every process in a group or session that a
# holder's command recorded in TAG.ids (the ids are pids of this test's
# processes, and a pid is not reused while its group or session lives).
kill_escapees() {
	local ids=() f stat rest pg sid
	for f in "$BATS_TEST_TMPDIR"/*.ids; do
		[[ -f $f ]] && mapfile -t -O "${#ids[@]}" ids <"$f"
	done
	((${#ids[@]})) || return 0
	local -A want=()
	for f in "${ids[@]}"; do want[$f]=1; done
	for f in /proc/[0-9]*/stat; do
		{ read -r stat <"$f"; } 2>/dev/null || continue
		rest=${stat##*) }
		read -r _ _ pg sid _ <<<"$rest"
		if [[ -n ${want[$pg]:-} || -n ${want[$sid]:-} ]]; then
			f=${f#/proc/}
			kill -KILL "${f%/stat}" 2>/dev/null
		fi
	done
	return 0
}

# A waiter (one server) sits in BLPOP on the wake list.
waiter_blocked() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

# next_holder_gets_it NAME: a holder that did not wait gets the lock with
# the oracle free (status 99 would be an overlap).
next_holder_gets_it() {
	run redlock -n "$1" flock -n -E 99 "$ORACLE" true
	[[ $status != 99 ]] || fail "overlap: the lock was free but the previous holder's tree still held the oracle"
	assert_success
}

@test "after 'redlock break' the escaped processes are dead when redlock exits 75, and the next holder does not overlap" {
	start_escaping h -t 3s job
	run -0 redlock break job
	bg_wait h 15
	assert_equal "$BG_STATUS" 75
	assert_escapees_dead "after redlock exited 75"
	next_holder_gets_it job
}

@test "a server stopped past the TTL: the escaped processes are gone by the lease deadline and the next holder does not overlap" {
	start_escaping h -t 3s job
	stop_server main
	local p ref
	p=$(now_ms)
	ref=$(lease_ref h "$p" 3000)
	assert_gone_by h $((ref + 3000)) "the lease deadline"
	assert_escapees_dead "after the lease deadline"
	after_stopped_server h "$p"
}

@test "redlock SIGKILLed: the guard kills the escaped processes at once, and the waiting holder does not overlap" {
	start_escaping h -t 2s job
	guarded_bg c -t 2s -w 10 job
	wait_until -t 10 waiter_blocked
	local k
	k=$(now_ms)
	kill -KILL "$(bg_pid h)"
	assert_gone_by h $((k + $(scale_ms 1000))) "redlock was killed"
	assert_escapees_dead "after the guard acted"
	assert_gets_lock c 10
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "--max-time: the escaped processes are dead when redlock exits 124, and the waiting holder does not overlap" {
	# Long enough for the escaped processes to be seen running and for
	# the waiter to queue up behind it on a loaded machine (4 s was too
	# short for the first with the suite's files beside it).
	start_escaping h -t 3s --max-time "$(scale_ms 8000)ms" job
	guarded_bg c -t 3s -w 20 job
	wait_until -t 10 waiter_blocked
	bg_wait h "$(($(scale_ms 8000) / 1000 + 15))"
	assert_equal "$BG_STATUS" 124
	assert_escapees_dead "after redlock exited 124"
	assert_gets_lock c 10
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

@test "SIGTERM to redlock: the escaped processes are dead when redlock has released, and the waiting holder does not overlap" {
	start_escaping h -t 3s job
	guarded_bg c -t 3s -w 10 job
	wait_until -t 10 waiter_blocked
	kill -TERM "$(bg_pid h)"
	bg_wait h 15
	assert_equal "$BG_STATUS" 143
	assert_escapees_dead "after redlock exited"
	assert_gets_lock c 10
	release_guarded c
	assert_equal "$BG_STATUS" 0
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

# guard_started REDLOCK COMMAND: redlock has forked its guard (a child
# of REDLOCK other than its COMMAND), which stops the command's tree if
# redlock dies.
guard_started() {
	local p
	for p in $(children_of "$1"); do
		[[ $p != "$2" ]] && return 0
	done
	return 1
}

@test "setsid and timeout(1) children are stopped on loss and when redlock is SIGKILLed" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 1500ms esc sh -c '
		setsid sh -c "echo \$\$ >$0/setsid.pid; exec sleep 30" &
		timeout 30 sh -c "echo \$\$ >$0/timeout.pid; exec sleep 30" &
		: >"$0/held"; wait' "$d"
	wait_until test -s "$d/setsid.pid"
	wait_until test -s "$d/timeout.pid"
	wait_for_file "$d/held"
	run -0 redlock break esc
	bg_wait h 10
	assert_equal "$BG_STATUS" 75
	assert wait_for_exit "$(cat "$d/setsid.pid")" 5
	assert wait_for_exit "$(cat "$d/timeout.pid")" 5
	rm -f "$d"/*.pid "$d/held"
	bg_start k "$RL" -t 1500ms esc2 sh -c '
		echo $$ >"$0/command.pid"
		setsid sh -c "echo \$\$ >$0/setsid.pid; exec sleep 30" &
		: >"$0/held"; wait' "$d"
	wait_for_file "$d/held"
	wait_until test -s "$d/setsid.pid"
	# SIGKILL redlock once its guard runs.
	wait_until guard_started "$(bg_pid k)" "$(cat "$d/command.pid")"
	kill -KILL "$(bg_pid k)"
	assert wait_for_exit "$(cat "$d/setsid.pid")" 5
}

@test "a process that left the group holds the lock until it ends, like a background job" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" bgtree sh -c 'setsid sh -c "echo \$\$ >$0/s.pid; sleep 1" & : >"$0/held"' "$d"
	wait_for_file "$d/held"
	wait_until test -s "$d/s.pid"
	run -1 redlock -n bgtree true
	bg_wait h 10
	assert_equal "$BG_STATUS" 0
	assert pid_dead "$(cat "$d/s.pid")"
	assert key_absent redlock:bgtree
}
