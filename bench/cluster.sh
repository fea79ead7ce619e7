#!/bin/bash
# bench/cluster.sh - `make bench`, row I: what one Redis Cluster
# redirection costs an uncontended `redlock NAME true`.  bench/run.sh
# calls it; it also runs alone.
#
# Starts a cluster of three masters (redis-server --cluster-enabled, on
# free loopback ports, no persistence), picks a NAME, and measures with
# hyperfine -N, in interleaved rounds:
#   owner    redlock -u OWNER NAME true     (the node that serves NAME)
#   other    redlock -u OTHER NAME true     (another master: one MOVED)
#   flock    flock FILE true                (the yardstick of run.sh)
# and prints a Markdown table (row G, with each median's ratio to
# flock's from the same run, and other/owner: the redirection's cost)
# with its notes on stdout.  Progress goes to stderr.
#
# Every process it starts is stopped by pid on exit (even Ctrl-C), and
# its temporary directory removed; every loop is bounded.
#
# Environment: BENCH_QUICK=1 (fewer runs), BENCH_KEEP=1 (keep the
# temporary directory).
set -u -o pipefail

awk() { LC_ALL=C command awk "$@"; }
sort() { LC_ALL=C command sort "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REDLOCK=$(dirname "$BENCH")/redlock
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=1 MAX=60 WARM=3
else
	ROUNDS=3 MAX=200 WARM=5
fi

log() { printf "bench cluster: [%3ds] %s\n" "$SECONDS" "$*" >&2; }
die() { log "$*"; exit 1; }

TMP='' PIDS=()

cleanup() {
	local p i
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$TMP" ] && [ "${BENCH_KEEP:-0}" != 1 ]; then
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A loopback port nobody listens on, below 55536 (a cluster node's bus
# port is given explicitly, but keep both in the usual range).
pick_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

# Start one cluster node of our own in $TMP/nN; appends its port to PORTS.
start_node() {
	local n=$1 try i p b pid got
	mkdir -p "$TMP/n$n"
	for ((try = 0; try < 10; try++)); do
		p=$(pick_port) || break
		b=$(pick_port) || break
		[ "$p" = "$b" ] && continue
		redis-server --bind 127.0.0.1 --port "$p" --cluster-enabled yes \
		    --cluster-port "$b" --cluster-config-file nodes.conf \
		    --save '' --appendonly no --dir "$TMP/n$n" \
		    --logfile "$TMP/n$n/log" --daemonize no </dev/null >/dev/null 2>&1 &
		pid=$!
		PIDS+=("$pid")
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			got=$(redis-cli -h 127.0.0.1 -p "$p" INFO server 2>/dev/null |
			    tr -d '\r' | awk -F: '$1 == "process_id" { print $2 }')
			[ "$got" = "$pid" ] && { PORTS+=("$p"); return 0; }
			[ -n "$got" ] && break	# someone else's server
			sleep 0.05
		done
	done
	die "cannot start a cluster node (see $TMP/n$n/log)"
}

cluster_ok() {
	local p
	for p in "${PORTS[@]}"; do
		redis-cli -h 127.0.0.1 -p "$p" CLUSTER INFO 2>/dev/null |
		    grep -q '^cluster_state:ok' || return 1
	done
}

# median p25 p75 of the numbers in a file
stats() {
	sort -g "$1" | awk '
		function q(p,  h, l) {
			h = (NR - 1) * p + 1; l = int(h)
			return l < NR ? a[l] + (h - l) * (a[l + 1] - a[l]) : a[l]
		}
		{ a[NR] = $1 }
		END { if (NR) printf "%.6f %.6f %.6f %d\n", q(0.5), q(0.25), q(0.75), NR }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
ms() { awk -v v="$1" 'BEGIN { printf(v < 10 ? "%.2f" : "%.1f", v) }'; }

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
for c in hyperfine redis-server redis-cli flock; do
	command -v "$c" >/dev/null 2>&1 || die "missing $c: run bench/setup.sh (as root)"
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-bench-cluster.XXXXXX") || die "mktemp failed"

PORTS=()
for n in 1 2 3; do start_node "$n"; done
addrs=()
for p in "${PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
    >"$TMP/create.log" 2>&1 || die "cluster create failed (see $TMP/create.log)"
for ((i = 0; i < 300; i++)); do cluster_ok && break; sleep 0.1; done
cluster_ok || die "the cluster did not come up in 30 s"

# The owner answers EXISTS; the others answer MOVED.
NAME=bench-cluster
for p in "${PORTS[@]}"; do
	if [[ $(redis-cli -h 127.0.0.1 -p "$p" EXISTS "redlock:$NAME") =~ ^[0-9]+$ ]]; then
		OWNER=$p
	else
		OTHER=$p
	fi
done
if [ -z "${OWNER:-}" ] || [ -z "${OTHER:-}" ]; then
	die "cannot tell who serves $NAME"
fi
log "cluster on ${addrs[*]}; $NAME on :$OWNER, measured also through :$OTHER"

declare -A LINE=(
	[owner]="$REDLOCK -u redis://127.0.0.1:$OWNER $NAME true"
	[other]="$REDLOCK -u redis://127.0.0.1:$OTHER $NAME true"
	[flock]="flock $TMP/$NAME.lock true"
)
for ((round = 1; round <= ROUNDS; round++)); do
	for key in flock owner other; do
		hyperfine -N --style none --warmup "$WARM" --min-runs 10 \
		    --max-runs "$MAX" --export-json "$TMP/$key-$round.json" \
		    -n "$key" "${LINE[$key]}" >"$TMP/$key-$round.out" 2>&1 ||
		    die "$key failed: $(tail -n 3 "$TMP/$key-$round.out")"
		awk '/"times": \[/ { f = 1; next } f && /\]/ { f = 0 }
		     f { gsub(/[ ,]/, ""); printf "%.6f\n", $1 * 1000 }' \
		    "$TMP/$key-$round.json" >>"$TMP/$key.ms"
	done
	log "round $round of $ROUNDS done"
done

declare -A MED CELL
for key in flock owner other; do
	read -r med p25 p75 n < <(stats "$TMP/$key.ms")
	MED[$key]=$med
	CELL[$key]="$(ms "$med") ±$(ms "$(awk -v a="$p25" -v b="$p75" 'BEGIN { print (b - a) / 2 }')") ms"
	CELL[$key,n]=$n
done
cat <<EOF
| | measure | through the owner | through another node | flock(1) | another node / owner |
|---|---|---|---|---|---|
| I | Redis Cluster, 3 masters: uncontended \`redlock NAME true\`, median ±semi-IQR | ${CELL[owner]} ($(ratio "${MED[owner]}" "${MED[flock]}")×) | ${CELL[other]} ($(ratio "${MED[other]}" "${MED[flock]}")×) | ${CELL[flock]} (1.00×) | $(ratio "${MED[other]}" "${MED[owner]}")× |

- I: runs ${CELL[owner,n]} (owner), ${CELL[other,n]} (another node), ${CELL[flock,n]} (flock) over $ROUNDS
  interleaved rounds; in brackets the ratio to flock(1) from the same run.
  Through another node a run costs one redirection: MOVED, a second
  connection (to the owner), and the script's body instead of its SHA-1;
  the release then goes straight to the owner.
EOF
