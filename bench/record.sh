#!/bin/bash
# bench/record.sh - row J of `make bench`: what the run record
# (--record) costs a Redis server per run, and that the other monitoring
# options (--metrics-dir, --on-exit) cost it nothing.  Three servers of
# our own, one for each kind of run, taking turns:
#
#   plain    redlock NAME true
#   local    redlock --metrics-dir DIR --on-exit true NAME true
#   record   redlock --record NAME true
#
# For each: server CPU per run (schedstat run time of all its threads,
# less the idle server's own rate, as bench/fleet.sh's G3 measures it)
# and the script calls per run (INFO commandstats).  Prints a Markdown
# section on stdout, progress on stderr.
#
# Environment: RECORD_RUNS (2000; 300 with BENCH_QUICK=1).
set -u -o pipefail

awk() { LC_ALL=C command awk "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
REDLOCK=${REDLOCK:-$ROOT/redlock}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	RUNS=${RECORD_RUNS:-300}
else
	RUNS=${RECORD_RUNS:-2000}
fi

log() { printf "record: [%3ds] %s\n" "$SECONDS" "$*" >&2; }
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

# eval_calls PORT: EVAL and EVALSHA calls per run since RESETSTAT.
eval_calls() {
	rcli "$1" INFO commandstats | tr -d '\r' | awk -F'[:,=]' -v n="$RUNS" \
	    '/^cmdstat_eval/ { c += $3 } END { printf "%.2f", c / n }'
}

round() {
	"$REDLOCK" -u "redis://127.0.0.1:$P_PORT" bench true || FAIL=1
	"$REDLOCK" -u "redis://127.0.0.1:$L_PORT" --metrics-dir "$TMP/m" \
	    --on-exit true bench true || FAIL=1
	"$REDLOCK" -u "redis://127.0.0.1:$R_PORT" --record bench true || FAIL=1
}

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
TMP=$(mktemp -d)
mkdir -p "$TMP/m"
FAIL=0
start_redis P
start_redis L
start_redis R
for ((i = 0; i < 20; i++)); do
	round
done
ip=$(idle "$P_PID") il=$(idle "$L_PID") ir=$(idle "$R_PID")
for p in "$P_PORT" "$L_PORT" "$R_PORT"; do
	rcli "$p" CONFIG RESETSTAT >/dev/null
done
log "$RUNS runs each of redlock NAME true, with --metrics-dir and --on-exit, with --record, in turn"
p0=$(cpu "$P_PID") l0=$(cpu "$L_PID") r0=$(cpu "$R_PID") t0=$(now_us)
for ((i = 0; i < RUNS; i++)); do
	round
done
t1=$(now_us) p1=$(cpu "$P_PID") l1=$(cpu "$L_PID") r1=$(cpu "$R_PID")
((FAIL)) && die "a run failed"
us=$((t1 - t0))
plain=$(per_run "$p0" "$p1" "$ip" "$us")
local_=$(per_run "$l0" "$l1" "$il" "$us")
rec=$(per_run "$r0" "$r1" "$ir" "$us")
cat <<MD
## J: what monitoring costs the server (bench/record.sh)

Server CPU per run (schedstat, less the idle rate) and script calls per
run, $RUNS runs of each kind taking turns, each kind on a server of its
own; renewals are not in these runs (\`true\` ends first), and
\`--record\` adds nothing to them (the record is written once, after the
release; tests/record.bats counts it).

| run | server CPU per run | script calls per run |
| --- | --- | --- |
| \`redlock NAME true\` | $plain µs | $(eval_calls "$P_PORT") |
| \`--metrics-dir DIR --on-exit true\` | $local_ µs | $(eval_calls "$L_PORT") |
| \`--record\` | $rec µs (+$(awk -v a="$rec" -v b="$plain" 'BEGIN { printf "%.1f", a - b }') µs) | $(eval_calls "$R_PORT") |
MD
