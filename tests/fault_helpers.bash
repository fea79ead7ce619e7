# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Helpers for the fault-injection and quorum tests (faults.bats,
# quorum.bats), on top of helpers.bash (load that first).
#
# The overlap oracle.  Every critical section of these tests runs as
#
#     flock -n -E 99 "$ORACLE" flock "$d/TAG.alive" /bin/sh -c BODY
#
# so the kernel, not redlock, decides whether two holders overlap: the
# whole process tree of a holder (background children included) keeps
# $ORACLE locked until its last process is gone, and a second holder that
# gets the Redis lock while any of it is still alive finds $ORACLE taken
# and exits 99 at once without running BODY.  TAG.alive is the same idea,
# per holder: watch_free TAG blocks on it and writes the wall-clock time
# (ms) at which the holder's last process died to TAG.freed, which tests
# compare with the lease's deadline.

# --- the oracle --------------------------------------------------------------

oracle_init() {
	export ORACLE=$BATS_TEST_TMPDIR/oracle
	: >"$ORACLE"
}

# The body of a guarded holder: $1 is the directory, $2 the tag.  It
# records its start time (TAG.start, wall ms), pid, token and fence,
# starts a background grandchild that ignores SIGTERM (TAG.gchild), says
# TAG.held, and runs until TAG.release (at most 60 s).  After a release
# it stops the grandchild, appends "start end fence" to $1/intervals and
# exits 0.
# shellcheck disable=SC2016
GUARDED_BODY='
	d=$1 t=$2
	s=$(date +%s%3N)
	echo "$s" >"$d/$t.start"
	echo $$ >"$d/$t.child"
	echo "$REDLOCK_TOKEN" >"$d/$t.token"
	echo "$REDLOCK_FENCE" >"$d/$t.fence"
	(trap "" TERM; exec sleep 60) &
	g=$!
	echo "$g" >"$d/$t.gchild"
	: >"$d/$t.held"
	. "$TESTS_DIR/lib/await.sh"
	await_file "$d/$t.release"
	kill -KILL "$g"
	echo "$s $(date +%s%3N) $REDLOCK_FENCE" >>"$d/intervals"'

# guarded_bg TAG [REDLOCK-OPTION...] NAME: starts `redlock OPTIONS NAME`
# in the background on a guarded holder (see above); does not wait.
guarded_bg() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	shift
	rm -f "$d/$tag".{held,release,start,child,gchild,token,fence,freed,watching}
	: >"$d/$tag.alive"
	bg_start "$tag" "$RL" "$@" flock -n -E 99 "$ORACLE" \
		flock "$d/$tag.alive" /bin/sh -c "$GUARDED_BODY" guarded "$d" "$tag"
}

# start_guarded TAG [REDLOCK-OPTION...] NAME: guarded_bg, then waits until
# the command runs (the lock is held) and starts watch_free TAG.
start_guarded() {
	guarded_bg "$@"
	wait_for_file "$BATS_TEST_TMPDIR/$1.held" 20 || {
		echo "start_guarded $1: not held; stderr: $(bg_err "$1")" >&2
		return 1
	}
	watch_free "$1"
}

# release_guarded TAG: lets the guarded command end; waits for redlock and
# sets BG_STATUS.
release_guarded() {
	: >"$BATS_TEST_TMPDIR/$1.release"
	bg_wait "$1" 20
}

# watch_free TAG: a background watcher that blocks on TAG.alive and writes
# the wall-clock ms at which it got it (every process of the holder's tree
# is gone) to TAG.freed.  Returns once the watcher is about to block.
watch_free() {
	local tag=$1 d=$BATS_TEST_TMPDIR
	bg_start "$tag.watch" /usr/bin/python3 -c '
import fcntl, os, sys, time
f = open(sys.argv[1], "r")
open(sys.argv[3], "w").close()
fcntl.flock(f, fcntl.LOCK_EX)
t = int(time.time() * 1000)
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as o:
    o.write("%d\n" % t)
os.rename(tmp, sys.argv[2])' "$d/$tag.alive" "$d/$tag.freed" "$d/$tag.watching"
	wait_for_file "$d/$tag.watching" 10
}

# freed_ms TAG: when TAG's holder tree was last alive (waits, bounded).
freed_ms() {
	wait_for_file "$BATS_TEST_TMPDIR/$1.freed" "${2:-20}" || return 1
	cat "$BATS_TEST_TMPDIR/$1.freed"
}

start_ms() { cat "$BATS_TEST_TMPDIR/$1.start"; }

# assert_gone_by TAG LIMIT_MS WHAT: the holder's whole tree was gone at or
# before LIMIT_MS (wall clock).
assert_gone_by() {
	local tag=$1 limit=$2 what=$3 freed
	local secs=$(((limit - $(now_ms)) / 1000 + 3))
	((secs > 0)) || secs=1
	if ! freed=$(freed_ms "$tag" "$(scale_ms "$secs")"); then
		fail "$tag: its command never ended"
		return 1
	fi
	if ((freed > limit)); then
		fail "$tag: command still alive $((freed - limit)) ms after $what (gone at $freed, limit $limit)"
		return 1
	fi
}

# assert_no_overlap FILE: the "start end fence" lines of FILE (wall ms)
# do not overlap once sorted by start, and their fences strictly increase.
assert_no_overlap() {
	run sort -n -k1,1 "$1"
	run awk 'NR > 1 && $1 < end { print "line " NR ": starts at " $1 " before " end; bad = 1 }
		NR > 1 && $3 + 0 <= fence + 0 { print "line " NR ": fence " $3 " after " fence; bad = 1 }
		{ end = $2; fence = $3 } END { exit bad }' <<<"$output"
	assert_success
}

# held_or_done TAG: the guarded job TAG runs its command, or has ended.
held_or_done() {
	[[ -e $BATS_TEST_TMPDIR/$1.held ]] || pid_dead "$(bg_pid "$1")"
}

# assert_gets_lock TAG [SECONDS]: the guarded job TAG (started with
# guarded_bg) gets the lock and runs its command within SECONDS (default
# 10); status 99 means the oracle caught an overlap.
assert_gets_lock() {
	local tag=$1
	wait_until -t "${2:-10}" held_or_done "$tag" || true
	[[ -e $BATS_TEST_TMPDIR/$tag.held ]] && return 0
	bg_wait "$tag" 1 || true
	if [[ $BG_STATUS == 99 ]]; then
		fail "$tag: overlap: the previous holder still held the oracle"
	else
		fail "$tag: never ran its command (status $BG_STATUS): $(bg_err "$tag")"
	fi
	return 1
}

# assert_all_ran N DIR: DIR/statuses has N lines "I STATUS", all 0, and
# DIR/intervals N critical sections.
assert_all_ran() {
	local n=$1 d=$2 bad
	assert_equal "$(wc -l <"$d/statuses")" "$n"
	bad=$(awk -v d="$d" '$2 != 0 {
		printf "#%s exited %s", $1, $2
		f = d "/cs" $1 ".err"
		if ((getline l < f) > 0) printf " (%s)", l
		printf "; "
	}' "$d/statuses")
	[[ -z $bad ]] || {
		fail "$(grep -cv ' 0$' "$d/statuses") of $n contenders failed: $bad"
		return 1
	}
	assert_equal "$(wc -l <"$d/intervals")" "$n"
}

# run_contenders N NAME [REDLOCK-OPTION...]: N redlocks at once on the
# lock NAME (the options given, then -t 3s -w 60; the TTL, and with it
# every per-command timeout, scaled by REDLOCK_TEST_SLOW), each running
# lib/critical-section.sh under the oracle; waits for them all (bounded),
# then asserts that no two critical sections overlapped and that every
# contender ran once.  Statuses in $BATS_TEST_TMPDIR/statuses, the
# critical sections in .../intervals.
run_contenders() {
	local n=$1 name=$2 d=$BATS_TEST_TMPDIR
	shift 2
	: >"$d/intervals"
	: >"$d/statuses"
	export CS_DIR=$d CRITICAL_SECTION=$TESTS_DIR/lib/critical-section.sh
	bg_start driver bash -c '
		n=$1 d=$2 name=$3 ttl=$4
		shift 4
		for ((i = 1; i <= n; i++)); do
			{ "$RL" "$@" -t "$ttl" -w 60 "$name" \
				-c '\''flock -n -E 99 "$ORACLE" "$CRITICAL_SECTION" "$CS_DIR"'\'' 2>"$d/cs$i.err"
			  echo "$i $?" >>"$d/statuses"; } &
		done
		wait' driver "$n" "$d" "$name" "$(scale_ms 3000)ms" "$@"
	bg_wait driver $((n * 2 + 30)) || fail "the contenders did not finish in time"
	# First the property itself, then that every contender got its turn.
	assert_no_overlap "$d/intervals"
	assert_all_ran "$n" "$d"
}

# --- stopping processes --------------------------------------------------------

# stop_server NAME / cont_server NAME: the redis-server started as NAME.
stop_server() {
	local pid
	pid=$(redis_pid "$1")
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null || {
		echo "stop_server: $1 (pid $pid) is not a running redis-server" >&2
		return 1
	}
	stop_pid "$pid"
}
cont_server() {
	cont_pid "$(redis_pid "$1")"
}

# restart_server NAME: stop the server (no persistence: its data is gone)
# and start a new one on the same socket.
restart_server() {
	stop_redis "$1" && start_redis "$1"
}

# --- the proxy -------------------------------------------------------------------

# start_proxy NAME: a proxy.py in front of server NAME's unix socket;
# sets PROXY_URL (redis://127.0.0.1:PORT).  Stopped with the test's
# background jobs.
start_proxy() {
	local d=$BATS_TEST_TMPDIR
	PROXY_GEN=0
	rm -f "$d/proxy.port" "$d/proxy.control" "$d/proxy.status"
	bg_start proxy /usr/bin/python3 "$TESTS_DIR/proxy.py" "$(redis_sock "$1")" \
		"$d/proxy.port" "$d/proxy.control" "$d/proxy.status"
	wait_for_file "$d/proxy.port" 10 || {
		echo "start_proxy: no port; $(bg_err proxy)" >&2
		return 1
	}
	PROXY_URL="redis://127.0.0.1:$(cat "$d/proxy.port")"
}

# proxy_set MODE [ARG]: pass | delay MS | blackhole | reset; returns once
# the proxy has it in force.
proxy_set() {
	local d=$BATS_TEST_TMPDIR
	PROXY_GEN=$((PROXY_GEN + 1))
	echo "g$PROXY_GEN $*" >"$d/proxy.control.tmp"
	mv "$d/proxy.control.tmp" "$d/proxy.control"
	wait_until -t 5 _proxy_has "g$PROXY_GEN"
}
_proxy_has() {
	local w
	{ read -r w _ <"$BATS_TEST_TMPDIR/proxy.status"; } 2>/dev/null && [[ $w == "$1" ]]
}

# --- misc ------------------------------------------------------------------------

# redlock_conns NAME: how many of the server's clients are not redis-cli
# (i.e. redlock's connections).
redlock_conns() {
	rcli_at "$1" CLIENT LIST | grep -vc 'cmd=client' || true
}

# scenario_sleep_until T_MS: sleep until the wall clock reaches T_MS.  Only
# for a fault that must last a given time (a server kept stopped past the
# TTL), never to wait for a state.
scenario_sleep_until() {
	local left=$(($1 - $(now_ms)))
	((left <= 0)) || sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
}

# lease_ref TAG FAULT_MS TTL_MS: the latest time the last successful
# renewal (or the acquire) of TAG's holder can have been sent, given a
# fault at FAULT_MS after which none succeeds: the acquire (TAG's start)
# if the fault came before the first renewal (ttl/3, less a margin),
# else the fault itself.
lease_ref() {
	local s
	s=$(start_ms "$1")
	if (($2 - s < $3 / 3 - 200)); then
		echo "$s"
	else
		echo "$2"
	fi
}

# after_stopped_server H P: the end of a scenario that stopped server
# main at P (wall ms) under holder H's 3 s lease: H gives up on the hung
# server by itself (75); the server is kept stopped well past the TTL,
# then continued; a next guarded holder gets the lock (the key has
# expired) without overlapping H, and releases it.
after_stopped_server() {
	bg_wait "$1" 10
	assert_equal "$BG_STATUS" 75
	scenario_sleep_until $(($2 + 3200))
	cont_server main
	guarded_bg c -t 3s -w 10 job
	assert_gets_lock c 15
	release_guarded c
	assert_equal "$BG_STATUS" 0
}

# within MS CMD...: runs CMD under timeout(1) (MS, scaled), for anything
# that could hang.
within() {
	local ms
	ms=$(scale_ms "$1")
	shift
	timeout -k 2 "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" "$@"
}
