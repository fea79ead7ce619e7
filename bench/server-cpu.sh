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
# Beside it, the time the server spent in the commands each client sent
# (INFO commandstats, per run: less noisy than the CPU, which counts the
# connections too): redlock's scripts and its cluster probe, lockfloor's
# SET and script.  With BENCH_BASELINE, another redlock build takes its
# turn too, on a server of its own, for a before/after in one run.
# Two more rows say how far the server's CPU is the server's own work:
# S0, the same minimal lock started through a shell (`bash -c 'exec
# lockfloor ...'`, the same commands from a client that does more
# before it connects) on a server of its own, taking its turn too; and
# S2, the instructions the server executes per run (valgrind's
# callgrind, its user space only: the commands and the event loop, not
# the kernel's network stack; skipped without valgrind), which no
# neighbour on the machine changes.
# Prints a Markdown section on stdout, progress on stderr.
#
# Environment: REDLOCK (the binary, default ./redlock), BENCH_BASELINE
# (another redlock binary; none by default), SERVER_RUNS (300; 100 with
# BENCH_QUICK=1), SERVER_BLOCKS (4; 3 with BENCH_QUICK=1),
# SERVER_INSTR_RUNS (S2: 100; 30 with BENCH_QUICK=1).
set -u -o pipefail

awk() { LC_ALL=C command awk "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
REDLOCK=${REDLOCK:-$ROOT/redlock}
BASELINE=${BENCH_BASELINE:-}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	RUNS=${SERVER_RUNS:-100} BLOCKS=${SERVER_BLOCKS:-3}
	IRUNS=${SERVER_INSTR_RUNS:-30}
else
	RUNS=${SERVER_RUNS:-300} BLOCKS=${SERVER_BLOCKS:-4}
	IRUNS=${SERVER_INSTR_RUNS:-100}
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
	[ -z "$BASELINE" ] ||
	    "$BASELINE" -u "redis://127.0.0.1:$B_PORT" bench true || FAIL=1
	"$FLOOR" run "$F_PORT" bench "$SHA" true || FAIL=1
	bash -c 'exec "$@"' bash "$FLOOR" run "$W_PORT" bench "$SHA" true || FAIL=1
}

# instr KIND PORT: the instructions a server under callgrind executes
# per run of KIND (redlock, baseline or floor), IRUNS runs after two
# that load the scripts; "" when it cannot tell.
instr() {
	local kind=$1 port=$2 vp i out="$TMP/cg.$2" sha
	valgrind --tool=callgrind --callgrind-out-file="$out" redis-server \
	    --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
	    --dir "$TMP" </dev/null >/dev/null 2>&1 &
	vp=$!
	SERVERS+=("$vp")
	for ((i = 0; i < 100; i++)); do
		rcli "$port" PING >/dev/null 2>&1 && break
		sleep 0.2
	done
	sha=$(rcli "$port" SCRIPT LOAD "$CAD")
	for ((i = 0; i < IRUNS + 2; i++)); do
		case $kind in
		redlock) "$REDLOCK" -u "redis://127.0.0.1:$port" bench true ;;
		baseline) "$BASELINE" -u "redis://127.0.0.1:$port" bench true ;;
		floor) "$FLOOR" run "$port" bench "$sha" true ;;
		esac || FAIL=1
		# The first dump ends the start-up and the two runs that
		# loaded the scripts; the second holds the IRUNS runs.
		((i == 1)) && callgrind_control -d "$vp" >/dev/null 2>&1
	done
	callgrind_control -d "$vp" >/dev/null 2>&1
	stop_pids "$vp"
	awk -v n="$IRUNS" '/^(summary|totals):/ { printf "%.0f", $2 / n; exit }' \
	    "$out.2" 2>/dev/null
}

# cmd_us PORT [PLAIN]: µs per run of the commands a client sent the
# server at PORT since the last CONFIG RESETSTAT: its scripts (whose
# commands are counted within them, and again each under its own
# name), a CLUSTER subcommand, and the command named PLAIN.
cmd_us() {
	rcli "$1" INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v plain="${2:-}" \
	    -v n="$RUNS" '$1 ~ /^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|cluster[|].*)$/ ||
	    $1 == "cmdstat_" plain { us += $5 } END { printf "%.1f", us / n }'
}

reset_stats() {
	local p
	for p in "$@"; do
		rcli "$p" CONFIG RESETSTAT >/dev/null || FAIL=1
	done
}

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] ||
    die "BENCH_BASELINE: no executable $BASELINE"
TMP=$(mktemp -d)
FLOOR=$TMP/lockfloor
build_lockfloor "$FLOOR" || die "cannot build bench/tools/lockfloor.c"
FAIL=0
start_redis R
start_redis F
start_redis W
[ -z "$BASELINE" ] || start_redis B
SHA=$(rcli "$F_PORT" SCRIPT LOAD "$CAD")
[ "$(rcli "$W_PORT" SCRIPT LOAD "$CAD")" = "$SHA" ] || die "SCRIPT LOAD failed"
for ((i = 0; i < 20; i++)); do
	round
done
ir=$(idle "$R_PID") if_=$(idle "$F_PID") iw=$(idle "$W_PID")
[ -z "$BASELINE" ] || ib=$(idle "$B_PID")
log "$BLOCKS blocks of $RUNS runs each of redlock NAME true${BASELINE:+, the baseline} and the minimal lock, in turn"
for f in rl fl wl bl ratio wratio bratio rc fc bc; do : >"$TMP/$f"; done
for ((b = 0; b < BLOCKS; b++)); do
	reset_stats "$R_PORT" "$F_PORT" ${BASELINE:+"$B_PORT"}
	r0=$(cpu "$R_PID") f0=$(cpu "$F_PID") w0=$(cpu "$W_PID") t0=$(now_us)
	[ -z "$BASELINE" ] || b0=$(cpu "$B_PID")
	for ((i = 0; i < RUNS; i++)); do
		round
	done
	t1=$(now_us) r1=$(cpu "$R_PID") f1=$(cpu "$F_PID") w1=$(cpu "$W_PID")
	[ -z "$BASELINE" ] || b1=$(cpu "$B_PID")
	((FAIL)) && die "a run failed"
	rl=$(per_run "$r0" "$r1" "$ir" $((t1 - t0)))
	fl=$(per_run "$f0" "$f1" "$if_" $((t1 - t0)))
	echo "$rl" >>"$TMP/rl"
	echo "$fl" >>"$TMP/fl"
	wl=$(per_run "$w0" "$w1" "$iw" $((t1 - t0)))
	echo "$wl" >>"$TMP/wl"
	awk -v a="$wl" -v b="$fl" 'BEGIN { printf "%.3f\n", a / b }' >>"$TMP/wratio"
	cmd_us "$R_PORT" >>"$TMP/rc" && echo >>"$TMP/rc"
	cmd_us "$F_PORT" set >>"$TMP/fc" && echo >>"$TMP/fc"
	awk -v a="$rl" -v b="$fl" 'BEGIN { printf "%.3f\n", a / b }' >>"$TMP/ratio"
	msg="block $((b + 1)): redlock $rl µs ($(tail -n1 "$TMP/rc") in commands)"
	if [ -n "$BASELINE" ]; then
		bl=$(per_run "$b0" "$b1" "$ib" $((t1 - t0)))
		echo "$bl" >>"$TMP/bl"
		cmd_us "$B_PORT" >>"$TMP/bc" && echo >>"$TMP/bc"
		awk -v a="$rl" -v b="$bl" 'BEGIN { printf "%.3f\n", a / b }' >>"$TMP/bratio"
		msg+=", baseline $bl µs ($(tail -n1 "$TMP/bc"))"
	fi
	log "$msg, minimal lock $fl µs ($(tail -n1 "$TMP/fc"))"
done
rl=$(median <"$TMP/rl") fl=$(median <"$TMP/fl") ratio=$(median <"$TMP/ratio")
wl=$(median <"$TMP/wl") wratio=$(median <"$TMP/wratio")
irl='' ifl='' ibl='' iratio=''
if command -v callgrind_control >/dev/null; then
	log "S2: $IRUNS runs of each on a server under callgrind"
	p=$(pick_port) && irl=$(instr redlock "$p")
	p=$(pick_port) && ifl=$(instr floor "$p")
	[ -z "$BASELINE" ] || { p=$(pick_port) && ibl=$(instr baseline "$p"); }
	[ -n "$irl" ] && [ -n "$ifl" ] &&
	    iratio=$(awk -v a="$irl" -v b="$ifl" 'BEGIN { printf "%.2f", a / b }')
fi
rc=$(median <"$TMP/rc") fc=$(median <"$TMP/fc")
cratio=$(awk -v a="$rc" -v b="$fc" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05 ? "PASS" : "MISS") }')
base_col='' base_sep='' base_cell='' base_c=''
if [ -n "$BASELINE" ]; then
	base_col=' redlock (baseline) |' base_sep='---|'
	base_cell=" $(median <"$TMP/bl") µs |"
	base_c=" $(median <"$TMP/bc") µs |"
fi
cat <<MD
## S: what a run costs the server (bench/server-cpu.sh)

| | measure | redlock |$base_col minimal lock | ratio | target | |
|---|---|---|${base_sep}---|---|---|---|
| S | Redis CPU per \`redlock NAME true\` against one \`SET NX PX\`, \`true\`, one check-and-delete \`EVALSHA\` (lockfloor), median of $BLOCKS blocks × $RUNS runs | $rl µs |$base_cell $fl µs | ${ratio}× | ≤ 1.05× | $verdict |
| S′ | the same, time in the commands each sent (INFO commandstats: redlock's two scripts and its cluster probe; lockfloor's SET and script), median block | $rc µs |$base_c $fc µs | ${cratio}× | — | |
| S0 | control: the minimal lock started through a shell (the same commands, $wl µs), Redis CPU per run against lockfloor run directly, median of the blocks' ratios | — |$([ -n "$BASELINE" ] && echo " — |") $fl µs | ${wratio}× | — | |
MD
[ -n "$iratio" ] && cat <<MD
| S2 | instructions the server executes per run (callgrind, user space), $IRUNS runs | $irl |$([ -n "$BASELINE" ] && echo " ${ibl:-—} |") $ifl | ${iratio}× | — | |
MD
cat <<MD

- S: server CPU = schedstat run time of all the server's threads, less
  its idle rate; each kind of run on a server of its own, the $([ -n "$BASELINE" ] && echo four || echo three) taking
  turns run by run (S0's is the third).  Blocks (redlock$([ -n "$BASELINE" ] && echo " / baseline") / minimal, µs):
  $(if [ -n "$BASELINE" ]; then paste -d/ "$TMP/rl" "$TMP/bl" "$TMP/fl"; else paste -d/ "$TMP/rl" "$TMP/fl"; fi | paste -sd' ' | sed 's/ /, /g').
  Ratio: the median of the blocks' ratios$([ -n "$BASELINE" ] && echo "; against the baseline: $(median <"$TMP/bratio")×").
  Commands per block (µs per run): redlock $(paste -sd' ' "$TMP/rc" | sed 's/ /, /g')$([ -n "$BASELINE" ] && echo "; baseline $(paste -sd' ' "$TMP/bc" | sed 's/ /, /g')"); minimal
  $(paste -sd' ' "$TMP/fc" | sed 's/ /, /g').
- S0: the server sees the same commands from both minimal locks; what
  differs is the client's work around them (a shell started first) on
  the cores the server shares.  That difference in the server's CPU is
  the measure's, not the server's: caches and cores shared with the
  clients.  S2 counts what no neighbour changes.
MD
