#!/usr/bin/env bash
#
# valgrind.sh - representative runs of redlock under valgrind (`make
# valgrind`): the run form with renewals, every verb, waiting, a quorum,
# re-entrance, error paths, a lost lock, a server that dies, signals,
# TLS (a run with renewals, a verb, a verification failure, a bad key).
# Each run must end with its expected exit status and valgrind must
# report nothing: no memory error, no definite or indirect leak, in
# redlock and in the guard process it forks (valgrind follows a fork;
# the command itself is exec'd outside valgrind, --trace-children=no).
#
# Usage: tools/valgrind.sh
# Environment:
#   REDLOCK    the binary (default: ./redlock of the repository)
#   VALGRIND   the valgrind command (default: valgrind)
#   VG_KEEP    set to keep the logs and the server directory
# Starts and stops its own redis-server(s), on unix sockets in a
# temporary directory; stops only the servers it started.
# Exits 0 when every run passed, 1 otherwise.

set -u
cd "$(dirname "$0")/.." || exit 70
repo=$PWD
REDLOCK=${REDLOCK:-$repo/redlock}
case $REDLOCK in
/*) ;;
*) REDLOCK=$repo/$REDLOCK ;;
esac
[[ -x $REDLOCK ]] || {
	echo "valgrind.sh: $REDLOCK is not executable (run make)" >&2
	exit 1
}
read -r -a valgrind <<<"${VALGRIND:-valgrind}"
dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-vg.XXXXXX") || exit 70
failed=0
passed=0
pids=()

# --- private redis-servers -------------------------------------------------

# start_server NAME [OPTION...]: redis-server on $dir/NAME.sock, no
# persistence, with the redis-server options given.
start_server() {
	local name=$1 i
	shift
	redis-server --daemonize yes --port 0 --unixsocket "$dir/$name.sock" \
		--unixsocketperm 700 --save '' --appendonly no --dir "$dir" \
		--pidfile "$dir/$name.pid" --logfile "$dir/$name.log" "$@" \
		</dev/null >/dev/null 2>&1 || return 1
	for ((i = 0; i < 200; i++)); do
		[[ $(redis-cli -s "$dir/$name.sock" PING 2>/dev/null) == PONG ]] &&
			[[ -s $dir/$name.pid ]] && return 0
		sleep 0.05
	done
	echo "valgrind.sh: redis-server $name did not start" >&2
	return 1
}

# stop_server NAME: stop the server started as NAME, if it runs.
stop_server() {
	local f=$dir/$1.pid pid i
	[[ -s $f ]] || return 0
	pid=$(cat "$f")
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
}

# kill_server NAME: SIGKILL it, as a crash.
kill_server() {
	local pid
	pid=$(cat "$dir/$1.pid")
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null && kill -KILL "$pid"
}

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	stop_server main
	stop_server q2
	stop_server q3
	stop_server doomed
	stop_server tls
	if [[ -n ${VG_KEEP:-} ]]; then
		echo "# valgrind: logs kept in $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

rcli() { redis-cli -s "$dir/main.sock" "$@"; }

# wait_for CMD...: poll CMD for up to 20 s.
wait_for() {
	local i
	for ((i = 0; i < 400; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
blpop_waiting() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

# --- valgrind ----------------------------------------------------------------

# The wrapper every run goes through: also usable by a command that
# calls redlock again (re-entrance).  Logs go to $dir/logs/CASE/.
cat >"$dir/vg-redlock" <<WRAP
#!/bin/sh
mkdir -p "$dir/logs/\${VG_CASE:-misc}"
exec ${valgrind[*]} -q --leak-check=full --errors-for-leak-kinds=definite,indirect \\
	--show-leak-kinds=definite,indirect \\
	--error-exitcode=99 --trace-children=no --num-callers=30 \\
	--log-file="$dir/logs/\${VG_CASE:-misc}/vg.%p" "$REDLOCK" "\$@"
WRAP
chmod +x "$dir/vg-redlock"
VG=$dir/vg-redlock

# clean_logs CASE: every valgrind log of CASE is empty (-q prints only
# errors); else print them.
clean_logs() {
	local f ok=0
	for f in "$dir/logs/$1"/vg.*; do
		[[ -f $f ]] || continue
		if [[ -s $f ]]; then
			echo "#   valgrind log $f:"
			sed 's/^/#     /' "$f"
			ok=1
		fi
	done
	return "$ok"
}

# verdict CASE WANT GOT: record the result of one run.
verdict() {
	local name=$1 want=$2 got=$3 why=''
	[[ $got == "$want" ]] || why="exit status $got, want $want"
	clean_logs "$name" || why+="${why:+; }valgrind reported errors"
	if [[ -z $why ]]; then
		echo "ok - $name"
		passed=$((passed + 1))
	else
		echo "not ok - $name: $why"
		[[ -s $dir/out ]] && sed 's/^/#   out: /' "$dir/out"
		failed=$((failed + 1))
	fi
}

# check CASE WANT ARG...: run redlock ARG... under valgrind.
check() {
	local name=$1 want=$2 got=0
	shift 2
	VG_CASE=$name "$VG" "$@" >"$dir/out" 2>&1 </dev/null || got=$?
	verdict "$name" "$want" "$got"
}

# background CASE ARG...: start redlock ARG... under valgrind; sets BG.
background() {
	local name=$1
	shift
	VG_CASE=$name "$VG" "$@" >"$dir/out" 2>&1 </dev/null &
	BG=$!
	pids+=("$BG")
}

# finish CASE WANT: wait for the background run and judge it.
finish() {
	local got=0
	wait "$BG" || got=$?
	verdict "$1" "$2" "$got"
}

# --- the runs -------------------------------------------------------------------

start_server main || exit 1
export REDLOCK_URL=unix://$dir/main.sock
unset REDLOCK_PREFIX REDLOCK_PASSWORD REDISCLI_AUTH REDLOCK_HELD
sock=$dir/main.sock
echo "# valgrind: $REDLOCK against redis-server on $sock"

# TTLs: valgrind makes redlock's first round trip slow (the code is
# translated as it first runs), and an attempt must be answered within
# ttl/10 (ttl/100 with several servers) or the server counts as
# unavailable; so -t 2s (renewed every 667 ms, 200 ms per attempt; at
# -t 300ms, 50 ms per attempt, a loaded machine fails now and then) and
# -t 60s for a quorum.

# started CASE: sets CMD to a command that says it has started (creates
# $dir/CASE.started), then runs for 10 s.
started() {
	# shellcheck disable=SC2016 # $1 is the inner shell's
	CMD=(sh -c ': >"$1"; exec sleep 10' sh "$dir/$1.started")
}

# The run form, renewing around a 3 s command.
check run-renewing 0 -t 2s renewing sleep 3
check run-shell-status 3 -t 2s shell -c 'sleep 1; exit 3'
check run-verbose 0 -v -t 2s --min-hold 200ms verbose true
check run-max-time 124 -t 2s --max-time 500ms maxtime sleep 5
check run-not-found 127 nf /nonexistent/command
check run-not-executable 126 nx /dev/null
# A quorum needs independent servers (two databases of one are one).
start_server q2 && start_server q3 || exit 1
check run-quorum 0 -t 60s -u "unix://$sock" -u "unix://$dir/q2.sock" \
	-u "unix://$dir/q3.sock" quorum sleep 0.5
stop_server q2
stop_server q3
check run-reentrant 0 -t 2s reent sh -c "exec '$VG' reent true"

# Every verb.
VG_CASE=acquire "$VG" acquire -t 10s verb >"$dir/token" 2>"$dir/out" </dev/null
verdict acquire 0 $?
token=$(head -n 1 "$dir/token")
check status-held 0 status verb
check status-json 0 status --json verb
check list 0 list
check list-json 0 list --json 'v*'
check extend 0 extend -t 20s verb "$token"
check busy-nonblock 1 -n verb true
check busy-wait 7 -E 7 -w 300ms verb true
check release 0 release verb "$token"
check release-again 1 release verb "$token"
check status-free 1 status verb
check acquire-env 0 acquire --env -t 10s verb
check break 0 break verb
check break-free 1 break verb
# A waiter that gets the lock when its holder's key expires.
check acquire-expiring 0 acquire -t 2s waited
check wait-for-expiry 0 -w 10s -t 2s waited true

# Usage and unavailable servers.
check help 0 --help
check usage-bad-url 64 -u 'redis://:hunter2@host:99999' name true
check usage-bad-option 64 --bogus name true
check usage-bad-duration 64 -t 1e30 name true
check unreachable-socket 69 -u "unix://$dir/nothing.sock" name true
check unreachable-tcp 69 -u redis://127.0.0.1:1 acquire name
check unreachable-status 69 -u "unix://$dir/nothing.sock" status name

# A lost lock: the key is deleted while the command runs.
started lost-deleted
background lost-deleted -t 2s lost "${CMD[@]}"
wait_for test -e "$dir/lost-deleted.started" && rcli DEL redlock:lost >/dev/null
finish lost-deleted 75

# A lost lock: the server dies while the command runs.
start_server doomed || exit 1
started lost-server-died
background lost-server-died -t 2s -u "unix://$dir/doomed.sock" doomed "${CMD[@]}"
wait_for test -e "$dir/lost-server-died.started" && kill_server doomed
finish lost-server-died 75

# A signal forwarded to the command.
started signal-forwarded
background signal-forwarded -t 2s sig "${CMD[@]}"
wait_for test -e "$dir/signal-forwarded.started" && kill -TERM "$BG"
finish signal-forwarded 143

# A signal while waiting for a held lock (blocked in BLPOP).
check acquire-held 0 acquire -t 30s held
background signal-waiting held true
wait_for blpop_waiting && kill -TERM "$BG"
finish signal-waiting 143

# TLS, against a server with a TLS port and a certificate made here for
# localhost, signed by a CA of our own.
tls_server() {
	local port
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$dir/ca.key" -out "$dir/ca.crt" -days 1 \
		-subj /CN=redlock-vg-ca 2>/dev/null &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$dir/srv.key" -out "$dir/srv.csr" -subj /CN=localhost \
			2>/dev/null &&
		printf 'subjectAltName=DNS:localhost\n' >"$dir/srv.ext" &&
		openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.crt" \
			-CAkey "$dir/ca.key" -CAcreateserial -days 1 \
			-extfile "$dir/srv.ext" -out "$dir/srv.crt" 2>/dev/null &&
		openssl pkey -in "$dir/srv.key" -aes256 -passout pass:x \
			-out "$dir/enc.key" 2>/dev/null || return 1
	port=$(/usr/bin/python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || return 1
	start_server tls --tls-port "$port" --tls-cert-file "$dir/srv.crt" \
		--tls-key-file "$dir/srv.key" --tls-ca-cert-file "$dir/ca.crt" \
		--tls-auth-clients no --bind 127.0.0.1 || return 1
	tls_url=rediss://localhost:$port
}
if command -v openssl >/dev/null && tls_server; then
	check tls-run-renewing 0 -t 2s -u "$tls_url" --cacert "$dir/ca.crt" \
		tlsjob sleep 3
	check tls-status 1 -u "$tls_url" --cacert "$dir/ca.crt" status tlsjob
	check tls-verify-failed 69 -u "$tls_url" tlsjob true
	check tls-encrypted-key 64 -u "$tls_url" --cacert "$dir/ca.crt" \
		--cert "$dir/srv.crt" --key "$dir/enc.key" tlsjob true
else
	echo "not ok - tls: no TLS server (openssl, redis-server --tls-port)"
	failed=$((failed + 1))
fi

echo "# valgrind: $passed passed, $failed failed"
((failed == 0))
