#!/usr/bin/env bash
#
# guard-cost.sh - what the failover guard (HIGH AVAILABILITY in redlock-protocol(7)) costs Redis:
# server CPU per acquisition, from INFO commandstats, through a plain URL
# and through a redis+sentinel:// URL to the same master.
#
# Usage: bench/guard-cost.sh [RUNS]        (default 2000 a URL)
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
runs=${1:-2000}
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

# block URL N: run it N times; print the EVALSHA and ROLE microseconds
# they cost the master.
block() {
	local url=$1 n=$2 i e0 r0
	e0=$(stat evalsha usec)
	r0=$(stat role usec)
	for ((i = 0; i < n; i++)); do
		"$rl" -u "$url" bench true
	done
	echo "$(($(stat evalsha usec) - ${e0:-0})) $(($(stat role usec) - ${r0:-0}))"
}

plain_url="redis://127.0.0.1:$mport"
sentinel_url="redis+sentinel://127.0.0.1:$sport/m"
"$rl" -u "$plain_url" warm true		# load the scripts
"$rl" -u "$sentinel_url" warm true
redis-cli -p "$mport" CONFIG RESETSTAT >/dev/null
redis-cli -p "$mport" SET x x >/dev/null	# so that stat() finds lines
redis-cli -p "$mport" ROLE >/dev/null
# Blocks of the two URLs alternate, so that other load on the machine
# hits both alike.  Under load a block's figure only grows (the time a
# command was preempted counts), so the least block of each URL is the
# estimate; the medians are shown beside.
rounds=${ROUNDS:-20}
per=$((runs / rounds))
plains=() guards=() roles=()
for ((k = 0; k < rounds; k++)); do
	read -r ep _ < <(block "$plain_url" "$per")
	read -r es rs < <(block "$sentinel_url" "$per")
	plains+=("$(awk -v e="$ep" -v n="$per" 'BEGIN { printf "%.2f", e / n }')")
	guards+=("$(awk -v e="$es" -v n="$per" 'BEGIN { printf "%.2f", e / n }')")
	roles+=("$(awk -v r="$rs" -v n="$per" 'BEGIN { printf "%.2f", r / n }')")
done
# least / median of the arguments
least() { printf '%s\n' "$@" | sort -g | head -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# What the guard calls inside the script, per call.
parts=
for c in info time hmget get; do
	parts+=" $c $(stat "$c" usec_per_call)"
done
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $rounds blocks of $per runs a URL, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "acquire+release scripts per run, plain URL:    least $(least "${plains[@]}") us, median $(median "${plains[@]}") us"
echo "acquire+release scripts per run, Sentinel URL: least $(least "${guards[@]}") us, median $(median "${guards[@]}") us"
awk -v a="$(least "${plains[@]}")" -v b="$(least "${guards[@]}")" \
	-v c="$(median "${plains[@]}")" -v d="$(median "${guards[@]}")" \
	'BEGIN { printf "guard per acquisition:                        %.1f us (least), %.1f us (median)\n", b - a, d - c }'
echo "ROLE per connection (Sentinel URL):            median $(median "${roles[@]}") us"
echo "commands inside, us per call:                 $parts"
