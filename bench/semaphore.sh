#!/bin/bash
# bench/semaphore.sh - redlock as a counting semaphore: 8 workers each run
# a short command under `redlock --limit 4` again and again; measures the
# runs per second and the largest number of commands seen inside at once,
# which must be 4 (never more, and the limit is reached).
#
# The oracle: each command creates a file of its own in a directory,
# counts the files there (a shell glob, no fork), notes the count, stays
# 10 ms and removes its file.  A file exists only while its command holds
# a place, so a count never exceeds the commands really inside.
#
# Usage: bench/semaphore.sh [--port PORT] [--row TOOL...]
#   --port PORT   use the redis-server on 127.0.0.1:PORT (bench/run.sh's);
#                 otherwise one is started on a free port and stopped after
#   --row TOOL... print a row of bench/run.sh's table (row H; one column
#                 per TOOL, redlock's filled) and a note line, instead of
#                 the summary
# Environment: BENCH_QUICK=1 fewer runs; SEM_WORKERS (8), SEM_LIMIT (4),
# SEM_ITERS (40 a worker; 10 quick).
# Exit status: 0 the figures were measured and the largest count is the
# limit; 1 otherwise (the reason on stderr).
set -u -o pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REDLOCK=$(dirname "$BENCH")/redlock
WORKERS=${SEM_WORKERS:-8}
LIMIT=${SEM_LIMIT:-4}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ITERS=${SEM_ITERS:-10}
else
	ITERS=${SEM_ITERS:-40}
fi
DEADLINE=120	# seconds the whole run may take before it is stopped

port='' row=0 tools=()
while [ $# -gt 0 ]; do
	case $1 in
	--port) port=$2; shift 2 ;;
	--row) row=1; shift; tools=("$@"); break ;;
	*) echo "semaphore.sh: unknown argument '$1'" >&2; exit 1 ;;
	esac
done

[ -x "$REDLOCK" ] || { echo "semaphore.sh: no $REDLOCK: run make first" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-sem.XXXXXX") || exit 1
server=''
workers=()

cleanup() {
	local p
	trap - EXIT INT TERM
	for p in "${workers[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${workers[@]}"; do
		wait "$p" 2>/dev/null
	done
	if [ -n "$server" ]; then
		kill -TERM "$server" 2>/dev/null
		wait "$server" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A server of our own on a free port, checked to be ours by its pid.
start_server() {
	local try i p got
	for ((try = 0; try < 10; try++)); do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
		redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no \
		    --dir "$TMP" --logfile "$TMP/redis.log" </dev/null >/dev/null 2>&1 &
		server=$!
		for ((i = 0; i < 100; i++)); do
			got=$(redis-cli -h 127.0.0.1 -p "$p" INFO server 2>/dev/null |
			    tr -d '\r' | awk -F: '$1 == "process_id" { print $2 }')
			[ "$got" = "$server" ] && { port=$p; return 0; }
			[ -n "$got" ] && break
			sleep 0.05
		done
		kill -TERM "$server" 2>/dev/null
		wait "$server" 2>/dev/null
		server=''
	done
	echo "semaphore.sh: cannot start redis-server" >&2
	return 1
}

[ -n "$port" ] || start_server || exit 1
mkdir "$TMP/in"

# shellcheck disable=SC2016 # expanded by the command's sh
cs=': >"$1/in/$$"; set -- "$1" "$1"/in/*; n=$(($# - 1)); echo "$n" >>"$1/seen"; sleep 0.01; rm -f "$1/in/$$"'

t0=$EPOCHREALTIME
for ((w = 0; w < WORKERS; w++)); do
	(
		for ((i = 0; i < ITERS; i++)); do
			"$REDLOCK" -u "redis://127.0.0.1:$port" -p "bench-sem-$$:" \
			    --limit "$LIMIT" -t 10s sem sh -c "$cs" sh "$TMP" || exit 1
		done
	) &
	workers+=("$!")
done
( sleep "$DEADLINE" && touch "$TMP/timeout" && kill -TERM "${workers[@]}" 2>/dev/null ) &
dog=$!
failed=0
for p in "${workers[@]}"; do
	wait "$p" || failed=$((failed + 1))
done
t1=$EPOCHREALTIME
kill -TERM "$dog" 2>/dev/null
wait "$dog" 2>/dev/null
workers=()

runs=$(wc -l <"$TMP/seen" 2>/dev/null || echo 0)
max=$(sort -n "$TMP/seen" 2>/dev/null | tail -n 1)
rate=$(awk -v n="$runs" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
ok=1
why=''
if [ -e "$TMP/timeout" ]; then
	ok=0 why="did not finish in ${DEADLINE}s"
elif [ "$failed" -ne 0 ] || [ "$runs" -ne $((WORKERS * ITERS)) ]; then
	ok=0 why="$failed workers failed, $runs of $((WORKERS * ITERS)) runs"
elif [ "${max:-0}" != "$LIMIT" ]; then
	ok=0 why="largest concurrency ${max:-0}, not $LIMIT"
fi

if [ "$row" = 1 ]; then
	# shellcheck disable=SC2016 # Markdown code, not expansions
	printf '| H | semaphore: `redlock --limit %s`, %s workers: runs/s, largest concurrency seen |' \
	    "$LIMIT" "$WORKERS"
	for t in "${tools[@]}"; do
		if [ "$t" = redlock ]; then
			printf ' %s/s, max %s |' "$rate" "${max:-0}"
		else
			printf ' — |'
		fi
	done
	printf ' max %s | max = %s | %s |\n' "${max:-0}" "$LIMIT" "$([ "$ok" = 1 ] && echo PASS || echo MISS)"
	# shellcheck disable=SC2016
	printf -- '- H redlock: %s workers × %s runs of a 10 ms command under `--limit %s` in %s s; ' \
	    "$WORKERS" "$ITERS" "$LIMIT" "$secs"
	printf 'concurrency counted by the commands themselves%s\n' "${why:+; $why}"
else
	echo "semaphore: $WORKERS workers x $ITERS runs under --limit $LIMIT: $runs runs in ${secs}s," \
	    "$rate runs/s, largest concurrency seen $max${why:+ ($why)}"
fi
[ "$ok" = 1 ] || { echo "semaphore.sh: $why" >&2; exit 1; }
