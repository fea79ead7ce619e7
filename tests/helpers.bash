# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Shared helpers for the redlock bats suite.
#
# Every .bats file does:
#
#     load helpers
#     lifecycle main          # its private servers; see lifecycle below
#
# and calls the binary only through `redlock` (a function here) or "$RL"
# (a shim on PATH, usable from child shells and background jobs), so that
# $REDLOCK (binary path) and $REDLOCK_WRAPPER (e.g. `valgrind -q
# --error-exitcode=99`) apply to every invocation.
#
# Nothing here sleeps to synchronise: helpers poll for a state with a
# bounded number of tries and a deadline.

# --- libraries --------------------------------------------------------------

_helpers_load_lib() {
	local name=$1 dir
	local -a dirs=()
	IFS=: read -r -a dirs <<<"${BATS_LIB_PATH:-}"
	for dir in "${dirs[@]}" /usr/lib/bats /usr/local/lib/bats /usr/lib; do
		if [[ -n $dir && -f $dir/$name/load.bash ]]; then
			_HELPERS_LIB_DIR=$dir
			_helpers_source_lib "$dir/$name" || load "$dir/$name/load"
			return 0
		fi
	done
	printf 'helpers: cannot find %s in $BATS_LIB_PATH or /usr/lib/bats\n' "$name" >&2
	return 1
}

# _helpers_source_lib DIR: does what DIR/load.bash does when each of its
# lines (but blank ones and comments) is
#     source "$(dirname "${BASH_SOURCE[0]}")/FILE"
# as bats-support's and bats-assert's are: the same files, sourced in the
# same order, without the subshell and the dirname(1) that each such
# line starts.  Every test loads these files anew, and those 17
# processes a test were about 25 ms of CPU each, some 7 % of the
# suite's.  Fails having sourced nothing if load.bash has another line.
_helpers_source_lib() {
	local pre='source "$(dirname "${BASH_SOURCE[0]}")/' line f
	local -a files=()
	while IFS= read -r line || [[ -n $line ]]; do
		[[ -z $line || $line == '#'* ]] && continue
		f=${line#"$pre"}
		[[ $f != "$line" && $f =~ ^[A-Za-z0-9_./-]+\"$ ]] || return 1
		files+=("$1/${f%\"}")
	done <"$1/load.bash"
	for f in "${files[@]}"; do
		# shellcheck disable=SC1090 # the library's own files
		source "$f" || return 1
	done
}
_helpers_load_lib bats-support
_helpers_load_lib bats-assert

bats_require_minimum_version 1.5.0

# What `cd DIR && pwd` prints, without its subshell when DIR is already
# absolute and plain (every test runs these lines).
if [[ $BATS_TEST_DIRNAME == /?*/* && $BATS_TEST_DIRNAME != *//* &&
	$BATS_TEST_DIRNAME != */. && $BATS_TEST_DIRNAME != */./* &&
	$BATS_TEST_DIRNAME != */.. && $BATS_TEST_DIRNAME != */../* &&
	$BATS_TEST_DIRNAME != */ && -d $BATS_TEST_DIRNAME ]]; then
	TESTS_DIR=$BATS_TEST_DIRNAME
	REPO_DIR=${TESTS_DIR%/*}
else
	TESTS_DIR=$(cd "$BATS_TEST_DIRNAME" && pwd)
	REPO_DIR=$(cd "$TESTS_DIR/.." && pwd)
fi
export TESTS_DIR

# bats runs a trap before every command that records the stack, for the
# line a failure is reported at: most of the suite's CPU time went to it.
# The test files' own lines keep it (bats runs them from a copy in its
# temporary directory); lines in these helpers and in bats-assert and
# bats-support skip the recording, so a failure in them is reported at
# the test's line that called them.
if declare -F bats_add_debug_exclude_path >/dev/null; then
	bats_add_debug_exclude_path "$TESTS_DIR"
	[[ $BATS_TEST_DIRNAME == "$TESTS_DIR" ]] ||
		bats_add_debug_exclude_path "$BATS_TEST_DIRNAME"
	bats_add_debug_exclude_path "$_HELPERS_LIB_DIR"
fi

# Time multiplier for slow wrappers (valgrind): every timeout goes through
# scale_ms / the helpers below.
if [[ -z ${REDLOCK_TEST_SLOW:-} ]]; then
	if [[ -n ${REDLOCK_WRAPPER:-} ]]; then
		REDLOCK_TEST_SLOW=5
	else
		REDLOCK_TEST_SLOW=1
	fi
fi

# --- time ---------------------------------------------------------------

# now_ms: wall clock in milliseconds (no fork).
now_ms() {
	local us=${EPOCHREALTIME//[!0-9]/}
	echo $((us / 1000))
}

# to_ms DURATION: "1.5" (seconds), "2s", "250ms" -> integer milliseconds.
to_ms() {
	local ms
	_to_ms_var ms "$1" || return 1
	echo "$ms"
}

# _to_ms_var VAR DURATION: to_ms into variable VAR, without the $(...)
# that a caller of to_ms needs (a fork of the test's shell).
_to_ms_var() {
	local d=$2 num unit
	if [[ $d =~ ^([0-9]+(\.[0-9]+)?)(ms|s)?$ ]]; then
		num=${BASH_REMATCH[1]}
		unit=${BASH_REMATCH[3]:-s}
	else
		echo "to_ms: bad duration '$d'" >&2
		return 1
	fi
	if [[ $unit == ms ]]; then
		printf -v "$1" '%s' "${num%.*}"
	else
		local int=${num%.*} frac=000
		[[ $num == *.* ]] && frac="${num#*.}000"
		printf -v "$1" '%s' $((10#$int * 1000 + 10#${frac:0:3}))
	fi
}

# scale_ms MS: MS times the slowness factor.
scale_ms() {
	echo $(($1 * REDLOCK_TEST_SLOW))
}

# --- polling ------------------------------------------------------------------

# _untraced CMD [ARG...]: runs CMD (a function of these helpers) without
# bats's DEBUG trap, and puts the trap back.  bats runs the trap before
# every command of a test, its helpers and their subshells, to keep a
# stack trace for its failure messages; in a polling loop that is ten
# times the loop's own cost, and it made bash the suite's main use of
# the processors (three quarters of its CPU time, measured with perf),
# far ahead of redlock and the servers.  A failure inside CMD is
# reported at the line that called the helper.
#
# The trap is read through a file (the test's own, one per process), not
# a $(trap -p), which forks the test's shell (about 1.4 ms of CPU) in
# every polling helper.
_untraced() {
	local trap_debug='' st=0
	local f=${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-${TMPDIR:-/tmp}}}/.debug-trap.$BASHPID
	trap -p DEBUG >"$f" && { IFS= read -r -d '' trap_debug <"$f" || true; }
	trap_debug=${trap_debug%$'\n'}
	trap - DEBUG
	"$@" || st=$?
	eval "${trap_debug:-trap - DEBUG}"
	return "$st"
}

# wait_until [-t SECONDS] CMD [ARG...]
# Polls CMD every 50 ms until it succeeds; fails after SECONDS (default
# 10, scaled by the slowness factor) or after the matching number of tries.
wait_until() { _untraced _wait_until "$@"; }
_wait_until() {
	local timeout=10
	if [[ ${1:-} == -t ]]; then
		timeout=$2
		shift 2
	fi
	local limit_ms
	_to_ms_var limit_ms "$timeout" || return 1
	_poll "$((limit_ms * REDLOCK_TEST_SLOW))" "$@" && return 0
	"$@" && return 0
	echo "wait_until: still false after ${timeout}s (x$REDLOCK_TEST_SLOW): $*" >&2
	return 1
}

# stays_false [-t SECONDS] CMD [ARG...]
# The negative window check: succeeds if CMD stays false for SECONDS
# (default 1, not scaled: it is a lower bound), polling every 50 ms.
stays_false() { _untraced _stays_false "$@"; }
_stays_false() {
	local timeout=1
	if [[ ${1:-} == -t ]]; then
		timeout=$2
		shift 2
	fi
	local limit_ms
	_to_ms_var limit_ms "$timeout" || return 1
	if _poll "$limit_ms" "$@"; then
		echo "stays_false: became true: $*" >&2
		return 1
	fi
	return 0
}

# _poll MS CMD [ARG...]: runs CMD every 50 ms until it succeeds, for at
# most MS ms (and MS / 50 + 2 tries); returns 0 if it did, 1 if the time
# ran out.  Neither the clock nor
# the pause starts a process: the loop reads EPOCHREALTIME, and pauses
# with a read that times out on a pipe which never has data (_nap_open;
# a subshell and a sleep(1) every 50 ms cost more than most of what the
# suite polls for).
_poll() {
	local limit_ms=$1 deadline tries i nap us st=1
	shift
	us=${EPOCHREALTIME//[!0-9]/}
	deadline=$((us / 1000 + limit_ms))
	tries=$((limit_ms / 50 + 2))
	for ((i = 0; i < tries; i++)); do
		if "$@"; then
			st=0
			break
		fi
		us=${EPOCHREALTIME//[!0-9]/}
		((us / 1000 >= deadline)) && break
		[[ -n ${nap:-} ]] || _nap_open
		read -r -t 0.05 -u "$nap" _ || true
	done
	[[ -z ${nap:-} ]] || exec {nap}>&-
	return "$st"
}

# _nap_open: opens, read-write, a pipe that never has data, into _poll's
# variable nap: the file's FIFO (_make_tools) when there is one, which
# costs no process, else a process substitution's pipe.
_nap_open() {
	if [[ -n ${HELPERS_NAP_FIFO:-} && -p $HELPERS_NAP_FIFO ]]; then
		exec {nap}<>"$HELPERS_NAP_FIFO"
	else
		exec {nap}<> <(:)
	fi
}

# wait_for_file PATH [SECONDS]
wait_for_file() {
	wait_until -t "${2:-10}" test -e "$1"
}

# wait_for_key KEY [SECONDS]: KEY exists on the current server.
wait_for_key() {
	wait_until -t "${2:-10}" key_exists "$1"
}

# wait_for_no_key KEY [SECONDS]
wait_for_no_key() {
	wait_until -t "${2:-10}" key_absent "$1"
}

key_exists() { [[ $(rcli EXISTS "$1") == 1 ]]; }
key_absent() { [[ $(rcli EXISTS "$1") == 0 ]]; }

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
	local stat state
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	state=${stat##*) }
	state=${state%% *}
	[[ $state != Z ]]
}
pid_dead() { ! pid_alive "$1"; }

# wait_for_exit PID [SECONDS]
wait_for_exit() {
	wait_until -t "${2:-10}" pid_dead "$1"
}

# --- the binary ----------------------------------------------------------------

# redlock ARGS...: the binary under test, through $REDLOCK_WRAPPER.
redlock() {
	"$RL" "$@"
}

# The shim that every invocation goes through ("$RL", also first on PATH
# as `redlock` for child shells), and a launcher for background jobs
# ("$SPAWN"): new session (so teardown can kill the job's process group),
# all signals default and unblocked (bash makes background jobs ignore
# SIGINT and SIGQUIT, python ignores SIGPIPE), every fd above 2 closed.
_make_tools() {
	local bin=$BATS_FILE_TMPDIR/bin
	mkdir -p "$bin"
	local target=${REDLOCK:-$REPO_DIR/redlock}
	case $target in
	/*) ;;
	*) target=$PWD/$target ;;
	esac
	local q=${target//\'/\'\\\'\'}
	{
		echo '#!/bin/sh'
		printf "exec %s '%s' \"\$@\"\n" "${REDLOCK_WRAPPER:-}" "$q"
	} >"$bin/redlock"
	chmod +x "$bin/redlock"
	cat >"$bin/spawn" <<'EOF'
#!/usr/bin/python3
import os, signal, sys
for s in range(1, signal.NSIG):
    try:
        signal.signal(s, signal.SIG_DFL)
    except (OSError, ValueError, RuntimeError):
        pass
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.setsid()
os.closerange(3, os.sysconf("SC_OPEN_MAX"))
os.execvp(sys.argv[1], sys.argv[1:])
EOF
	chmod +x "$bin/spawn"
	# The same in C (tests/tools/spawn.c, built by make check) when built:
	# the interpreter's start-up is most of this script's cost.
	[[ ! -x $REPO_DIR/tests/tools/spawn ]] || ln -sf "$REPO_DIR/tests/tools/spawn" "$bin/spawn"
	_use_rcli "$bin"
	# _poll's pauses read this FIFO, which nobody writes (see _nap_open).
	mkfifo "$bin/nap" && export HELPERS_NAP_FIFO=$bin/nap
	export RL=$bin/redlock SPAWN=$bin/spawn REDLOCK_BIN_UNDER_TEST=$target
	export PATH=$bin:$PATH
}

# _use_rcli BIN: the suite's redis-cli, tests/tools/rcli (built by make
# check; see tests/tools/rcli.c), as `redis-cli` in BIN, which goes first
# on PATH: it starts several times faster than Debian's redis-cli, which
# the tests call tens of thousands of times, and prints the same bytes;
# what it does not handle itself it hands to the real one,
# $REDLOCK_TEST_REDIS_CLI (default: the redis-cli on PATH).  Without the
# binary, or with REDLOCK_TEST_REAL_CLI=1, the tests use the real one.
_use_rcli() {
	local shim=$REPO_DIR/tests/tools/rcli
	if [[ -z ${REDLOCK_TEST_REDIS_CLI:-} ]]; then
		REDLOCK_TEST_REDIS_CLI=$(command -v redis-cli) || REDLOCK_TEST_REDIS_CLI=
	fi
	export REDLOCK_TEST_REDIS_CLI
	[[ ${REDLOCK_TEST_REAL_CLI:-} != 1 && -x $shim ]] || return 0
	ln -sf "$shim" "$1/redis-cli"
}

# --- background jobs -------------------------------------------------------------

# bg_start TAG CMD [ARG...]
# Starts CMD in the background through $SPAWN with stdout/stderr in
# $BATS_TEST_TMPDIR/TAG.out / TAG.err and stdin from /dev/null; sets
# BG_PID (the pid of CMD itself: spawn and the shim exec) and records it
# in TAG.pid for bg_wait and for teardown.
bg_start() {
	local tag=$1
	shift
	"$SPAWN" "$@" >"$BATS_TEST_TMPDIR/$tag.out" 2>"$BATS_TEST_TMPDIR/$tag.err" </dev/null 3>&- &
	BG_PID=$!
	echo "$BG_PID" >"$BATS_TEST_TMPDIR/$tag.pid"
	echo "$BG_PID" >>"$BATS_TEST_TMPDIR/bg.pids"
}

bg_pid() { cat "$BATS_TEST_TMPDIR/$1.pid"; }

# bg_wait TAG [SECONDS]
# Waits (bounded) for the job to end; sets BG_STATUS to its exit status.
# On timeout the job's process group is killed and bg_wait fails.
bg_wait() {
	local tag=$1 pid
	pid=$(bg_pid "$tag")
	if ! wait_until -t "${2:-20}" pid_dead "$pid"; then
		echo "bg_wait: $tag (pid $pid) still running; killing it" >&2
		_kill_session "$pid"
		wait "$pid" 2>/dev/null
		BG_STATUS=timeout
		return 1
	fi
	BG_STATUS=0
	wait "$pid" || BG_STATUS=$?
	return 0
}

bg_out() { cat "$BATS_TEST_TMPDIR/$1.out"; }
bg_err() { cat "$BATS_TEST_TMPDIR/$1.err"; }

# hold_lock TAG [REDLOCK-OPTION...] NAME
# Runs `redlock OPTIONS NAME CMD` in the background; CMD writes its pid to
# TAG.child, creates TAG.held and runs until release_lock TAG (at most 60
# s). Returns once the command runs, i.e. the lock is held.
hold_lock() {
	local tag=$1
	shift
	local d=$BATS_TEST_TMPDIR
	rm -f "$d/$tag.held" "$d/$tag.release"
	bg_start "$tag" "$RL" "$@" /bin/sh -c '
		echo $$ >"$1"; : >"$2"; . "$TESTS_DIR/lib/await.sh"
		await_file "$3"' \
		holder "$d/$tag.child" "$d/$tag.held" "$d/$tag.release"
	wait_for_file "$d/$tag.held" 20
}

# release_lock TAG: lets the holder's command end; waits for redlock,
# sets BG_STATUS.
release_lock() {
	: >"$BATS_TEST_TMPDIR/$1.release"
	bg_wait "$1" 20
}

# _kill_session SID: SIGKILL every process of session SID. $SPAWN made a
# new session for each background job, so this reaches the job's whole
# tree (redlock, its command, the command's children) and nothing else.
_kill_session() { _kill_sessions "$1"; }

# _kill_sessions SID...: as _kill_session, for every SID in one pass
# over /proc (a test with a hundred jobs would otherwise read every
# process's stat a hundred times), untraced (see _untraced): it runs
# after every test with a background job.
#
# Every process is stopped before any is killed.  The signals go out one
# at a time, in the glob's order, which is not even the pids' order
# (/proc/1000 sorts before /proc/998); a shell that saw its child die
# before its own SIGKILL came would act on it (run an `||` branch, write
# a file), which a stopped one cannot.
_kill_sessions() { _untraced _kill_sessions_scan "$@"; }
_kill_sessions_scan() {
	local stat f rest p sid
	local -a pids=()
	local -A sids=()
	for sid in "$@"; do
		sids[$sid]=1
	done
	for f in /proc/[0-9]*/stat; do
		{ read -r stat <"$f"; } 2>/dev/null || continue
		rest=${stat##*) }
		# rest: state ppid pgrp session ...
		read -r _ _ _ p _ <<<"$rest"
		if [[ -n ${sids[$p]:-} ]]; then
			p=${f#/proc/}
			pids+=("${p%/stat}")
		fi
	done
	# Some may have exited since their stat was read.
	((${#pids[@]} == 0)) || {
		kill -STOP "${pids[@]}"
		kill -KILL "${pids[@]}"
	} 2>/dev/null
	return 0
}

_kill_bg_jobs() {
	local f=$BATS_TEST_TMPDIR/bg.pids pid
	local -a pids=()
	[[ -f $f ]] || return 0
	while read -r pid; do
		[[ $pid =~ ^[0-9]+$ ]] && pids+=("$pid")
	done <"$f"
	((${#pids[@]} == 0)) || _kill_sessions "${pids[@]}"
	for pid in "${pids[@]}"; do
		{ wait "$pid" || true; } 2>/dev/null
	done
	rm -f "$f"
}

# --- redis-server --------------------------------------------------------------

# free_port: a loopback TCP port nobody listens on right now, and that no
# other test file of this run has been or will be handed: every port
# handed out is recorded in $REDLOCK_TEST_PORTS (one directory shared by
# the files that tests/run.sh runs side by side; a mkdir there is atomic,
# and the first file to make it owns the port).  A server started on it
# may still find it taken by some other program: the start helpers
# retry with a new port when a server does not come up.
# The port is drawn at random from FREE_PORT_MIN..FREE_PORT_MAX, below
# Linux's range of ephemeral ports (32768 and up), so that it is never
# the local port of one of the connections the tests make; a refused
# connection says nobody listens (one subshell, not a Python start-up).
# The claim comes first, so that the probe never connects to a server of
# this run: tests count the connections their servers received.
FREE_PORT_MIN=20000
FREE_PORT_MAX=32767
free_port() {
	local dir=${REDLOCK_TEST_PORTS:-$BATS_RUN_TMPDIR/ports} port i
	mkdir -p "$dir"
	for ((i = 0; i < 50; i++)); do
		port=$((FREE_PORT_MIN + (RANDOM * 32768 + RANDOM) % (FREE_PORT_MAX - FREE_PORT_MIN + 1)))
		mkdir "$dir/$port" 2>/dev/null || continue
		# Someone else's: the claim stays, so no file probes it again.
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		echo "$port"
		return 0
	done
	echo "free_port: no port after $i tries" >&2
	return 1
}

# dead_port [N]: the N-th (default 1st) loopback port below 1024 that
# nothing listens on, for a server that refuses connections.  Test
# servers only ever get ports from free_port (1024 and up), so no test
# file running beside this one can start listening there.
dead_port() {
	local want=${1:-1} port found=0
	for ((port = 1; port < 1024; port++)); do
		# A refused connection is a dead port.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			found=$((found + 1))
			((found == want)) && {
				echo "$port"
				return 0
			}
		fi
	done
	return 1
}

# (These and rcli_at spell the directory out rather than call _redis_dir
# in a $(...): each $(...) forks the test's shell, and they run in every
# test's setup and polling loop.)
_redis_dir() { echo "$BATS_FILE_TMPDIR/redis-$1"; }
redis_sock() { echo "$BATS_FILE_TMPDIR/redis-$1/sock"; }
redis_port() { _redis_file "$1" port; }
redis_pid() { _redis_file "$1" started.pid; }
# _redis_file NAME FILE: the first line of server NAME's FILE, as cat
# would print it (without starting one); fails if there is none.
_redis_file() {
	local line
	{ IFS= read -r line || [[ -n $line ]]; } <"$BATS_FILE_TMPDIR/redis-$1/$2" || return 1
	echo "$line"
}

# start_redis NAME [--tcp] [--requirepass PW] [redis-server option...]
# Starts a private redis-server, always on the unix socket
# $(redis_sock NAME), with --tcp also on a free loopback port
# $(redis_port NAME). No persistence. Waits (bounded) until it answers.
start_redis() {
	local name=$1
	shift
	local tcp=0 pass=''
	local -a extra=()
	while (($#)); do
		case $1 in
		--tcp) tcp=1 ;;
		--requirepass)
			pass=$2
			extra+=(--requirepass "$2")
			shift
			;;
		*) extra+=("$1") ;;
		esac
		shift
	done
	local dir
	dir=$(_redis_dir "$name")
	mkdir -p "$dir"
	rm -f "$dir/sock" "$dir/pid" "$dir/port" "$dir/password" "$dir/started.pid"
	if ((${#dir} + 5 > 100)); then
		echo "start_redis: socket path too long: $dir/sock" >&2
		return 1
	fi
	[[ -n $pass ]] && printf '%s' "$pass" >"$dir/password"
	local attempt port=0
	for ((attempt = 0; attempt < 5; attempt++)); do
		if ((tcp)); then
			port=$(free_port)
		fi
		rm -f "$dir/pid"
		redis-server --daemonize yes --port "$port" --bind 127.0.0.1 \
			--unixsocket "$dir/sock" --unixsocketperm 700 \
			--save '' --appendonly no --dir "$dir" \
			--pidfile "$dir/pid" --logfile "$dir/log" \
			"${extra[@]}" </dev/null >/dev/null 2>&1 3>&-
		if wait_until -t 10 _redis_answers "$name"; then
			cp "$dir/pid" "$dir/started.pid"
			((tcp)) && echo "$port" >"$dir/port"
			return 0
		fi
		# Did not come up (port taken?): stop whatever we started, retry.
		[[ -f $dir/pid ]] && _kill_pid_wait "$(cat "$dir/pid")"
	done
	echo "start_redis: redis-server $name did not start; log:" >&2
	cat "$dir/log" >&2 2>/dev/null
	return 1
}

_redis_answers() {
	local dir reply
	dir=$(_redis_dir "$1")
	[[ -S $dir/sock && -s $dir/pid ]] || return 1
	reply=$(rcli_at "$1" PING 2>&1) || return 1
	[[ $reply == PONG ]]
}

_kill_pid_wait() {
	local pid=$1
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	# Only a redis-server: never signal a recycled pid.
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	kill -CONT "$pid" 2>/dev/null # in case a test stopped it
	if ! wait_until -t 10 pid_dead "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait_until -t 5 pid_dead "$pid"
	fi
}

# stop_redis NAME: stops the server this file started under NAME.
stop_redis() {
	local f
	f=$(_redis_dir "$1")/started.pid
	[[ -f $f ]] || return 0
	_kill_pid_wait "$(cat "$f")"
	rm -f "$f"
}

# kill_redis NAME: SIGKILL (a crash), for tests of a vanishing server.
kill_redis() {
	local f pid
	f=$(_redis_dir "$1")/started.pid
	pid=$(cat "$f")
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null || return 1
	kill -KILL "$pid"
	wait_until -t 10 pid_dead "$pid"
	rm -f "$f"
}

# rcli_at NAME ARGS...: redis-cli on server NAME (raw output), with its
# password if it has one, else without any REDISCLI_AUTH.
rcli_at() {
	local dir=$BATS_FILE_TMPDIR/redis-$1 pw=
	shift
	if [[ -f $dir/password ]]; then
		IFS= read -r -d '' pw <"$dir/password" || true
		REDISCLI_AUTH=$pw redis-cli -s "$dir/sock" "$@"
	else
		(
			unset REDISCLI_AUTH
			exec redis-cli -s "$dir/sock" "$@"
		)
	fi
}

# rcli ARGS...: redis-cli on the current server (use_redis).
rcli() {
	rcli_at "$REDIS_NAME" "$@"
}

# use_redis NAME: make NAME the current server: REDIS_SOCK, REDLOCK_URL.
use_redis() {
	export REDIS_NAME=$1
	export REDIS_SOCK=$BATS_FILE_TMPDIR/redis-$1/sock
	export REDLOCK_URL="unix://$REDIS_SOCK"
}

# redis_info_field SECTION FIELD [NAME]: FIELD's value in INFO SECTION
# (read by the shell: no tr or sed to start in the polling loops).
redis_info_field() {
	rcli_at "${3:-$REDIS_NAME}" INFO "$1" | {
		local line
		while IFS= read -r line; do
			line=${line%$'\r'}
			[[ $line != "$2:"* ]] || echo "${line#*:}"
		done
	}
}

clients_count() { redis_info_field clients connected_clients "${1:-$REDIS_NAME}"; }

# keyspace_snapshot [NAME]: every key (escaped, sorted) with its type.
keyspace_snapshot() {
	local n=${1:-$REDIS_NAME}
	SNAP_SOCK=$(redis_sock "$n") /usr/bin/python3 - <<'EOF'
import os, redis
r = redis.Redis(unix_socket_path=os.environ["SNAP_SOCK"])
for k in sorted(r.scan_iter(count=1000)):
    print(repr(k), r.type(k).decode())
EOF
}

# --- lifecycle -----------------------------------------------------------------

common_setup_file() {
	_make_tools
	if [[ ! -x $REDLOCK_BIN_UNDER_TEST ]]; then
		echo "redlock binary not found or not executable: $REDLOCK_BIN_UNDER_TEST (run make, or set REDLOCK)" >&2
		return 1
	fi
	# The environment of the person running the tests must not leak in.
	unset REDLOCK_URL REDLOCK_PREFIX REDLOCK_PASSWORD REDISCLI_AUTH REDLOCK_HELD
	unset REDLOCK_NAME REDLOCK_KEY REDLOCK_TOKEN REDLOCK_FENCE
	# Nor any option's variable (REDLOCK_TTL, REDLOCK_TLS, ...); the
	# harness's own (REDLOCK, REDLOCK_WRAPPER, REDLOCK_TEST_*) stay.
	local v
	for v in "${!REDLOCK_@}"; do
		[[ $v == REDLOCK_WRAPPER || $v == REDLOCK_TEST_* ]] || unset "$v"
	done
}

common_teardown_file() {
	local d name
	for d in "$BATS_FILE_TMPDIR"/redis-*; do
		[[ -d $d ]] || continue
		name=${d##*/redis-}
		stop_redis "$name"
	done
}

# common_setup [SERVER...]: before each test, a clean environment and the
# keyspace of the current server (if any) and of the named ones empty.
common_setup() {
	unset REDLOCK_PREFIX REDLOCK_PASSWORD REDISCLI_AUTH REDLOCK_HELD
	[[ -z ${REDIS_NAME:-} ]] || use_redis "$REDIS_NAME"
	flush_servers ${REDIS_NAME:+"$REDIS_NAME"} "$@"
}

# flush_servers NAME...: FLUSHALL on each.
flush_servers() {
	local n
	for n in "$@"; do
		[[ $(rcli_at "$n" FLUSHALL) == OK ]] || {
			echo "FLUSHALL failed on $n" >&2
			return 1
		}
	done
}

common_teardown() {
	cont_all
	_kill_bg_jobs
}

# lifecycle [NAME [OPTION...]] [-- NAME [OPTION...]]...
# The setup_file, teardown_file, setup and teardown of a test file; call
# it right after the `load` lines.  setup_file starts a private server
# for each NAME given (start_redis NAME OPTION...; the first is the
# current server, see use_redis); setup empties them all and makes a
# fresh overlap oracle (when fault_helpers is loaded) before each test;
# teardown resumes what the test stopped and kills its background jobs;
# teardown_file stops every server the file started.  A file adds its own
# steps by defining file_setup (run after its servers started),
# test_setup (after the servers were emptied), test_teardown (before
# the jobs are killed) or file_teardown.  (bats calls the functions
# defined here, which shellcheck cannot see.)
# shellcheck disable=SC2317
lifecycle() {
	LIFECYCLE_ARGS=("$@")
	LIFECYCLE_SERVERS=()
	local prev=-- a
	for a in "$@"; do
		[[ $prev == -- && $a != -- ]] && LIFECYCLE_SERVERS+=("$a")
		prev=$a
	done
	setup_file() {
		common_setup_file
		local a
		local -a one=()
		for a in "${LIFECYCLE_ARGS[@]}" --; do
			if [[ $a != -- ]]; then
				one+=("$a")
				continue
			fi
			((${#one[@]} == 0)) || start_redis "${one[@]}" || return 1
			one=()
		done
		((${#LIFECYCLE_SERVERS[@]} == 0)) || use_redis "${LIFECYCLE_SERVERS[0]}"
		_lifecycle_hook file_setup
	}
	teardown_file() {
		_lifecycle_hook file_teardown
		common_teardown_file
	}
	setup() {
		common_setup "${LIFECYCLE_SERVERS[@]:1}"
		_lifecycle_hook oracle_init
		_lifecycle_hook test_setup
	}
	teardown() {
		_lifecycle_hook test_teardown
		common_teardown
	}
}

# _lifecycle_hook FUNCTION: runs FUNCTION if the file defines it.
_lifecycle_hook() {
	declare -F "$1" >/dev/null || return 0
	"$1"
}

# --- stopping processes --------------------------------------------------------

# stop_pid PID / cont_pid PID: SIGSTOP / SIGCONT a process this test
# started; every stopped pid is remembered so that teardown resumes it.
stop_pid() {
	echo "$1" >>"$BATS_TEST_TMPDIR/stopped.pids"
	kill -STOP "$1"
}
cont_pid() {
	kill -CONT "$1" 2>/dev/null || true
}

# cont_all: resume everything this test stopped (teardown).
cont_all() {
	local f=$BATS_TEST_TMPDIR/stopped.pids pid
	[[ -f $f ]] || return 0
	while read -r pid; do
		cont_pid "$pid"
	done <"$f"
	rm -f "$f"
}

# --- assertions --------------------------------------------------------------------

# assert_usage_error: after `run --separate-stderr`: status 64, nothing on
# stdout, stderr is one `redlock: ` line then the Try line.
# (Written as one check so that `assert_usage_error || fail ...` in a loop
# cannot pass on an early mismatch.)
assert_usage_error() {
	local why=''
	[[ $status == 64 ]] || why+="status $status; "
	[[ -z $output ]] || why+="stdout not empty; "
	[[ ${#stderr_lines[@]} == 2 ]] || why+="${#stderr_lines[@]} stderr lines; "
	[[ ${stderr_lines[0]:-} == 'redlock: '?* ]] || why+="first line not 'redlock: ...'; "
	[[ ${stderr_lines[1]:-} == "Try 'redlock --help' for more information." ]] ||
		why+="second line not the Try line; "
	[[ -z $why ]] || fail "not a usage error: $why
stdout: $output
stderr: $stderr"
}

# assert_diagnostics: every stderr line is `redlock: ...` (after run --separate-stderr).
assert_diagnostics() {
	local l
	for l in "${stderr_lines[@]}"; do
		assert_regex "$l" '^redlock: '
	done
}

UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
