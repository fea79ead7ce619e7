#!/usr/bin/env bash
#
# guard-cost.sh - what the failover guard (SPEC section 9) costs Redis:
# server CPU per acquisition, from INFO commandstats, through a plain URL
# and through a redis+sentinel:// URL to the same master.
#
# Usage: bench/guard-cost.sh [RUNS]        (default 1000 a URL)
# Environment: REDLOCK (the binary, default ./redlock).
#
# Starts its own master, replica and sentinel on free loopback ports in
# a temporary directory and stops them (by pid) at the end.  Each run is
# `redlock -u URL NAME true`: one acquire script and one release script.
# The acquire script's time (EVALSHA usec) includes the commands it
# calls, so the difference between the two URLs is the guard's share;
# the Sentinel URL also costs one ROLE a connection.

set -eu
cd "$(dirname "$0")/.."
runs=${1:-1000}
rl=${REDLOCK:-./redlock}
dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-guard.XXXXXX")
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		grep -q redis-server "/proc/$p/cmdline" 2>/dev/null && kill "$p"
	done
	rm -rf "$dir"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME ARGS...: a redis-server daemon; waits until it answers.
start() {
	local name=$1 port
	shift
	port=$(free_port)
	mkdir -p "$dir/$name"
	redis-server "$@" --port "$port" --bind 127.0.0.1 --daemonize yes \
		--pidfile "$dir/$name/pid" --logfile "$dir/$name/log" \
		--dir "$dir/$name" >/dev/null
	for _ in $(seq 100); do
		redis-cli -p "$port" PING >/dev/null 2>&1 && break
		sleep 0.05
	done
	pids+=("$(cat "$dir/$name/pid")")
	echo "$port"
}

mport=$(start master --save '' --appendonly no)
start replica --save '' --appendonly no --replicaof 127.0.0.1 "$mport" >/dev/null
printf 'sentinel monitor m 127.0.0.1 %s 1\n' "$mport" >"$dir/sentinel.conf"
sport=$(start sentinel "$dir/sentinel.conf" --sentinel)

# stat CMD FIELD: a field of INFO commandstats for CMD on the master.
stat() {
	redis-cli -p "$mport" INFO commandstats | tr -d '\r' |
		sed -n "s/^cmdstat_$1:.*[:,]$2=\([0-9.]*\).*/\1/p"
}

# measure URL: run it $runs times; print "script-usec-per-acquisition
# role-usec-per-connection".
measure() {
	local url=$1 i ev ro
	"$rl" -u "$url" warm true	# load the scripts
	redis-cli -p "$mport" CONFIG RESETSTAT >/dev/null
	for ((i = 0; i < runs; i++)); do
		"$rl" -u "$url" bench true
	done
	ev=$(stat evalsha usec)
	ro=$(stat role usec)
	# Two scripts a run (acquire, release): the release costs the same
	# through either URL, so half the difference is not split out here;
	# the whole per-run figure is reported, and the difference is the
	# guard's.
	awk -v e="${ev:-0}" -v r="${ro:-0}" -v n="$runs" \
		'BEGIN { printf "%.2f %.2f\n", e / n, r / n }'
}

read -r plain _ < <(measure "redis://127.0.0.1:$mport")
read -r guarded role < <(measure "redis+sentinel://127.0.0.1:$sport/m")
info=$(stat info usec_per_call)
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $runs runs a URL, $(uname -m)"
echo "acquire+release scripts per run, plain URL:    $plain us"
echo "acquire+release scripts per run, Sentinel URL: $guarded us"
awk -v a="$plain" -v b="$guarded" 'BEGIN { printf "guard per acquisition:                        %.2f us\n", b - a }'
echo "ROLE per connection (Sentinel URL):            $role us"
echo "INFO replication per call (inside the guard):  ${info:-?} us"
