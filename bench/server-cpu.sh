#!/bin/bash
# bench/server-cpu.sh - row S of `make bench`: what one `redlock NAME
# true` costs the Redis server, against the least any lock around the
# same command can cost it (bench/tools/lockfloor.c: one connection,
# `SET NX PX`, runs `true`, one check-and-delete script by SHA-1).
#
# Two servers of our own, one for each, so that each one's counters see
# one kind of run.  BLOCKS blocks of RUNS runs; within a block the two
# take turns run by run, so that a noisy neighbour hits them alike.  A
# block's figure is the server's own CPU (schedstat run time of all its
# threads) over the block, less that server's idle rate, per run; the
# row gives the median block and the median of the blocks' ratios.
# Prints a Markdown section on stdout, progress on stderr.
#
# Environment: REDLOCK (the binary, default ./redlock), SERVER_RUNS
# (300; 100 with BENCH_QUICK=1), SERVER_BLOCKS (4; 3 with BENCH_QUICK=1).
set -u -o pipefail

awk() { LC_ALL=C command awk "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
REDLOCK=${REDLOCK:-$ROOT/redlock}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	RUNS=${SERVER_RUNS:-100} BLOCKS=${SERVER_BLOCKS:-3}
else
	RUNS=${SERVER_RUNS:-300} BLOCKS=${SERVER_BLOCKS:-4}
fi

log() { printf "server-cpu: [%3ds] %s\n" "$SECONDS" "$*" >&2; }
die() { log "$*"; exit 1; }

TMP=''
SERVERS=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop_pids "${SERVERS[@]}"
	[ -n "$TMP" ] && rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

# median: of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR % 2) printf "%.2f", v[(NR + 1) / 2]
		else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

CAD='if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0'

round() {
	"$REDLOCK" -u "redis://127.0.0.1:$R_PORT" bench true || FAIL=1
	"$FLOOR" run "$F_PORT" bench "$SHA" true || FAIL=1
}

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
TMP=$(mktemp -d)
FLOOR=$TMP/lockfloor
cflags=$(pkg-config --cflags hiredis 2>/dev/null)
# shellcheck disable=SC2086,SC2046 # pkg-config's words
cc -O2 -std=c11 -D_GNU_SOURCE $cflags -o "$FLOOR" "$BENCH/tools/lockfloor.c" \
    -Wl,-Bstatic -lhiredis -Wl,-Bdynamic 2>/dev/null ||
    cc -O2 -std=c11 -D_GNU_SOURCE $cflags -o "$FLOOR" "$BENCH/tools/lockfloor.c" \
    $(pkg-config --libs hiredis 2>/dev/null) ||
    die "cannot build bench/tools/lockfloor.c"
FAIL=0
start_redis R
start_redis F
SHA=$(rcli "$F_PORT" SCRIPT LOAD "$CAD")
for ((i = 0; i < 20; i++)); do
	round
done
ir=$(idle "$R_PID") if_=$(idle "$F_PID")
log "$BLOCKS blocks of $RUNS runs each of redlock NAME true and the minimal lock, in turn"
: >"$TMP/rl" && : >"$TMP/fl" && : >"$TMP/ratio"
for ((b = 0; b < BLOCKS; b++)); do
	r0=$(cpu "$R_PID") f0=$(cpu "$F_PID") t0=$(now_us)
	for ((i = 0; i < RUNS; i++)); do
		round
	done
	t1=$(now_us) r1=$(cpu "$R_PID") f1=$(cpu "$F_PID")
	((FAIL)) && die "a run failed"
	rl=$(per_run "$r0" "$r1" "$ir" $((t1 - t0)))
	fl=$(per_run "$f0" "$f1" "$if_" $((t1 - t0)))
	echo "$rl" >>"$TMP/rl"
	echo "$fl" >>"$TMP/fl"
	awk -v a="$rl" -v b="$fl" 'BEGIN { printf "%.3f\n", a / b }' >>"$TMP/ratio"
	log "block $((b + 1)): redlock $rl µs, minimal lock $fl µs"
done
rl=$(median <"$TMP/rl") fl=$(median <"$TMP/fl") ratio=$(median <"$TMP/ratio")
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05 ? "PASS" : "MISS") }')
cat <<MD
## S: what a run costs the server (bench/server-cpu.sh)

| | measure | redlock | minimal lock | ratio | target | |
|---|---|---|---|---|---|---|
| S | Redis CPU per \`redlock NAME true\` against one \`SET NX PX\`, \`true\`, one check-and-delete \`EVALSHA\` (lockfloor), median of $BLOCKS blocks × $RUNS runs | $rl µs | $fl µs | ${ratio}× | ≤ 1.05× | $verdict |

- S: server CPU = schedstat run time of all the server's threads, less
  its idle rate; each kind of run on a server of its own, the two taking
  turns run by run.  Blocks (redlock / minimal, µs):
  $(paste -d/ "$TMP/rl" "$TMP/fl" | paste -sd' ' | sed 's/ /, /g').
  Ratio: the median of the blocks' ratios.
MD
