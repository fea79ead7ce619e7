#!/bin/bash
# bench/run.sh - `make bench`: redlock against flock(1), against the
# least a Redis lock can do (bench/tools/lockfloor.c's queue: a script
# that sets the key or joins the waiters, a wake-up list, a
# check-and-delete that pushes one wake-up; no fence, record or guard),
# and against `etcdctl lock`, a redis-cli shell loop and redis-py's Lock
# where those are installed (bench/setup.sh installs them from Debian's
# packages), all in one run on this machine.  Run from anywhere; it
# measures the ./redlock of the repository it lives in.
#
#   A  uncontended `TOOL NAME true`: median and spread; the ratio to
#      flock is the median of the ratios round by round (each tool once
#      a round, bench/tools/pairtime.c), the slow comparators by
#      hyperfine -N
#   B  8 workers x 100 read-increment-write of a counter file under the
#      lock: handoffs/s, and the final count must be exact
#   C  hand-over latency: from just before a holder's command exits to
#      the next holder's command starting, median of 20
#   D  peak RSS (VmHWM) of the lock process itself while it holds the
#      lock (the command's own memory is not counted)
#   E  as C, with 1,000 waiters queued on the lock (redlock and flock)
#   F  redlock with 5 servers (quorum) against 1 server, as A
#   G  fleet scale and Redis's cost per run and per renewal: bench/fleet.sh
#   H  redlock --limit 4 with 8 workers: runs/s and the largest
#      concurrency seen, which must be 4 (bench/semaphore.sh)
#   I  as A on a Redis Cluster, through the node that serves NAME and
#      through another (one redirection): bench/cluster.sh
#   J  the server CPU and script calls per run of redlock NAME true, with
#      --metrics-dir and --on-exit, and with --record: bench/record.sh
#   S  the server CPU per run of redlock NAME true against the least a
#      lock can cost (one SET NX PX and one check-and-delete script
#      around the same command): bench/server-cpu.sh
#   T  TLS: as A over rediss://, redlock against redis-cli --tls doing
#      one SET NX PX and one EVAL release (bench/tools/rcli-lock --tls),
#      with flock again beside them
#
# Every figure is shown as a ratio to flock's from the same run (F: to
# 1-server redlock), against the targets (A-D as the guard's cost was
# taken off the run's path tightened them), and the table is written to
# bench/results.md as well.
#
# Each benchmark uses servers that this script starts on 127.0.0.1 at a
# free port it finds (never 6379), checks that the server answering is
# its own, and stops them by pid.  Every loop is bounded in count and
# time; on exit (even Ctrl-C) every process it started is stopped and
# its temporary directories are removed.
#
# Environment:
#   BENCH_ONLY=ACF       run only these benchmarks (default ABCDEFGHIJST)
#   BENCH_TOOLS="redlock flock"   only these columns (default: all found;
#                        names: redlock fair floor flock etcd rcli py;
#                        fair is redlock --fair, whose queue B and C
#                        exercise; floor is the minimal Redis lock)
#   BENCH_WAITERS=1000   waiters queued in E
#   BENCH_QUICK=1        fewer runs everywhere (a smoke test, noisy)
#   BENCH_KEEP=1         keep the temporary directory (raw samples)
#   BENCH_BASELINE=PATH  also measure this other redlock binary in A and D,
#                        side by side ("redlock (baseline)"), to compare
#                        two builds in one run
set -u -o pipefail

# The tools measured run in the caller's environment, locale included
# (flock(1) loads the locale, which shows in D); only the script's own
# text processing is pinned to the C locale.
awk() { LC_ALL=C command awk "$@"; }
sort() { LC_ALL=C command sort "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
REDLOCK=$ROOT/redlock
RESULTS=$BENCH/results.md

ONLY=${BENCH_ONLY:-ABCDEFGHIJST}
BASELINE=${BENCH_BASELINE:-}
WAITERS=${BENCH_WAITERS:-1000}
QUICK=${BENCH_QUICK:-0}

if [ "$QUICK" = 1 ]; then
	A_PAIRS=60 A_LIMIT=30 A_ROUNDS=1 A_MAX=60 A_WARM=3 B_ROUNDS=1 B_ITERS=20 B_ITERS_SLOW=5 C_N=6 D_N=3 E_K=10
else
	A_PAIRS=600 A_LIMIT=180 A_ROUNDS=3 A_MAX=200 A_WARM=5 B_ROUNDS=3 B_ITERS=100 B_ITERS_SLOW=20 C_N=20 D_N=5 E_K=40
fi
B_WORKERS=8
B_LIMIT=60	# seconds one tool may take in B before it is stopped
C_HOLD=0.3	# seconds a holder keeps the lock in C (waiter starts meanwhile)

log() { printf "bench: [%3ds] %s\n" "$SECONDS" "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------------------
# Processes and clean-up

TMP='' SHM=''
SERVERS=()	# our redis-servers and etcd, stopped last

# any_alive, pick_port, start_redis VAR, rcli, info, now_us; stop_pids is
# this file's own below (it stops each pid's descendants too).
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

# The given pids and all their descendants, among this script's own
# descendants only (so a pid reused by someone else is never touched):
# one look at the process table, by parent pid, never by name.
tree_of() {
	ps -eo pid=,ppid= | awk -v self="$$" -v roots="$*" '
		{ par[$1] = $2; pid[NR] = $1 }
		END {
			mine[self] = 1
			do {
				more = 0
				for (i = 1; i <= NR; i++)
					if (!(pid[i] in mine) && (par[pid[i]] in mine)) {
						mine[pid[i]] = 1; more = 1
					}
			} while (more)
			n = split(roots, r, " ")
			for (i = 1; i <= n; i++)
				if (r[i] in mine && r[i] != self) want[r[i]] = 1
			do {
				more = 0
				for (i = 1; i <= NR; i++)
					if (!(pid[i] in want) && (par[pid[i]] in want)) {
						want[pid[i]] = 1; more = 1
					}
			} while (more)
			for (p in want) print p
		}'
}

# Stop pids and their descendants: TERM, up to 3 s, then KILL; reap.
stop_pids() {
	local p all i
	[ "$#" -eq 0 ] && return 0
	mapfile -t all < <(tree_of "$@")
	if [ "${#all[@]}" -gt 0 ]; then
		kill -TERM "${all[@]}" 2>/dev/null
		for ((i = 0; i < 60; i++)); do
			any_alive "${all[@]}" || break
			nap 0.05
		done
		kill -KILL "${all[@]}" 2>/dev/null
	fi
	for p in "$@"; do
		wait "$p" 2>/dev/null
	done
	return 0
}

# On exit: every process this script started, then its directories.
cleanup() {
	local rc=$? kids clients=() p
	trap - EXIT INT TERM HUP
	trap '' PIPE
	# The clients first, so that they can still release; then servers.
	mapfile -t kids < <(ps -o pid= --ppid "$$")
	for p in "${kids[@]}"; do
		[[ " ${SERVERS[*]} " == *" ${p// /} "* ]] || clients+=("$p")
	done
	stop_pids "${clients[@]}"
	stop_pids "${SERVERS[@]}"
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		log "kept $TMP ${SHM:-}"
	else
		[ -n "$TMP" ] && rm -rf "$TMP"
		[ -n "$SHM" ] && [ "$SHM" != "$TMP" ] && rm -rf "$SHM"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

# Sleep.  (Not `read -t`, which would spare a fork: bash 5.2 aborts
# when a trap runs `exit` during one, and then nothing is cleaned up.)
nap() {
	sleep "$1"
}

# Wait for pids, killing them after secs.  Returns the last non-zero
# status, or 124 when the deadline was hit.
wait_bounded() {
	local secs=$1 p rc=0 dog
	shift
	rm -f "$TMP/timeout"
	(
		sleep "$secs" || exit 0	# stopped: the pids ended in time
		touch "$TMP/timeout"
		stop_pids "$@"
	) 2>/dev/null &
	dog=$!
	for p in "$@"; do
		wait "$p" || rc=$?
	done
	stop_pids "$dog"
	if [ -e "$TMP/timeout" ]; then
		rm -f "$TMP/timeout"
		return 124
	fi
	return "$rc"
}

# Wait (bounded) until a file exists.
wait_file() {
	local i
	for ((i = 0; i < $2 * 100; i++)); do
		[ -e "$1" ] && return 0
		nap 0.01
	done
	return 1
}

# ---------------------------------------------------------------------------
# Servers

# Start an etcd of our own, data on tmpfs when there is one; sets EPORT.
start_etcd() {
	local try i p q pid name="bench$$"
	if [ -z "$SHM" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
		SHM=$(mktemp -d /dev/shm/redlock-bench.XXXXXX) || SHM=
	fi
	[ -n "$SHM" ] || SHM=$TMP
	for ((try = 0; try < 10; try++)); do
		p=$(pick_port) || break
		q=$(pick_port) || break
		[ "$p" = "$q" ] && continue
		rm -rf "$SHM/etcd"
		etcd --name "$name" --data-dir "$SHM/etcd" \
		    --listen-client-urls "http://127.0.0.1:$p" \
		    --advertise-client-urls "http://127.0.0.1:$p" \
		    --listen-peer-urls "http://127.0.0.1:$q" \
		    --initial-advertise-peer-urls "http://127.0.0.1:$q" \
		    --initial-cluster "$name=http://127.0.0.1:$q" \
		    --logger zap --log-level error \
		    </dev/null >"$TMP/etcd.log" 2>&1 &
		pid=$!
		SERVERS+=("$pid")
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			if etcdctl --endpoints="http://127.0.0.1:$p" member list \
			    2>/dev/null | grep -q ", $name, "; then
				EPORT=$p
				return 0
			fi
			nap 0.1
		done
		stop_pids "$pid"
	done
	log "cannot start etcd (see $TMP/etcd.log); no etcdctl column"
	return 1
}

# ---------------------------------------------------------------------------
# The tools: CMD=(the words that run a command under lock NAME)

declare -A LABEL=([redlock]=redlock [fair]="redlock --fair"
	[base]="redlock (baseline)" [floor]="minimal Redis lock"
	[flock]="flock(1)" [etcd]="etcdctl lock"
	[rcli]="redis-cli loop" [py]="redis-py Lock")

tool_cmd() {
	case $1 in
	redlock | redlock1) CMD=("$REDLOCK" -u "redis://127.0.0.1:$RPORT" "$2") ;;
	redlock5) CMD=("$REDLOCK" "${QUORUM_URLS[@]}" "$2") ;;
	fair) CMD=("$REDLOCK" -u "redis://127.0.0.1:$RPORT" --fair "$2") ;;
	floor) CMD=("$FLOOR" queue "$RPORT" "$2") ;;
	base) CMD=("$BASELINE" -u "redis://127.0.0.1:$RPORT" "$2") ;;
	redlock-tls) CMD=("$REDLOCK" -u "rediss://localhost:$TPORT" --cacert "$TMP/tls/ca.crt" "$2") ;;
	rcli-tls) CMD=("$BENCH/tools/rcli-lock" --tls "$TMP/tls/ca.crt" "$TPORT" "$2") ;;
	flock | tflock) CMD=(flock "$TMP/$2.lock") ;;
	tplain) CMD=("$REDLOCK" -u "redis://127.0.0.1:$RPORT" "$2") ;;
	dead-plain) CMD=("$REDLOCK" -u "redis://127.0.0.1:$DEADPORT" "$2") ;;
	dead-tls-insecure) CMD=("$REDLOCK" -u "rediss://localhost:$DEADPORT" --insecure "$2") ;;
	dead-tls-ca) CMD=("$REDLOCK" -u "rediss://localhost:$DEADPORT" --cacert "$TMP/tls/ca.crt" "$2") ;;
	dead-tls-system | dead-tls-bundle) CMD=("$REDLOCK" -u "rediss://localhost:$DEADPORT" "$2") ;;
	etcd) CMD=(etcdctl --endpoints="http://127.0.0.1:$EPORT" lock "$2" --) ;;
	rcli) CMD=("$BENCH/tools/rcli-lock" "$RPORT" "$2") ;;
	py) CMD=("$BENCH/tools/pylock" "$RPORT" "$2") ;;
	esac
}

# The same as one string, for hyperfine (which splits it like a shell).
tool_line() {
	tool_cmd "$@"
	printf -v LINE '%q ' "${CMD[@]}" "${@:3}"
	LINE=${LINE% }
}

# ---------------------------------------------------------------------------
# Numbers

# median p25 p75 count of the numbers in a file (one a line)
stats() {
	sort -g "$1" | awk '
		function q(p,  h, l) {
			h = (NR - 1) * p + 1; l = int(h)
			return l < NR ? a[l] + (h - l) * (a[l + 1] - a[l]) : a[l]
		}
		{ a[NR] = $1 }
		END {
			if (NR == 0) { print "nan nan nan 0"; exit }
			printf "%.6f %.6f %.6f %d\n", q(0.5), q(0.25), q(0.75), NR
		}'
}

# a / b, or empty when either is missing
ratio() {
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || return 0
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b }'
}

# A ratio as shown: 2 decimals and the sign (the verdict uses all 4).
fmt_ratio() {
	[ -n "${1:-}" ] || return 0
	awk -v r="$1" 'BEGIN { printf "%.2f×", r }'
}

# Is ratio r within the target (le: r <= t, ge: r >= t)?
meets() {
	awk -v r="$1" -v t="$3" -v op="$2" \
	    'BEGIN { exit !(op == "le" ? r <= t : r >= t) }'
}

ms() { awk -v v="$1" 'BEGIN { printf(v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v) }'; }

# The times a hyperfine JSON export recorded, in milliseconds.
hf_times() {
	awk '/"times": \[/ { f = 1; next } f && /\]/ { f = 0 }
	     f { gsub(/[ ,]/, ""); printf "%.6f\n", $1 * 1000 }' "$1"
}

declare -A VAL SPREAD NOTE BAD PRATIO

# ---------------------------------------------------------------------------
# A: uncontended `TOOL NAME true`, rounds interleaved so that a noisy
# neighbour hits every tool alike; the samples of all rounds pooled.

hf_rounds() {	# key... (keys name tools for tool_line, with a lock name)
	local round key max warm
	local -a env ign
	for ((round = 1; round <= A_ROUNDS; round++)); do
		for key in "$@"; do
			tool_line "$key" "bench-${key}-a" true
			max=$A_MAX warm=$A_WARM
			# The slow comparators: let hyperfine's own 3 s budget bound
			# them (min 10 runs), and warm up less.
			case $key in etcd | rcli | rcli-tls | py) warm=2 ;; esac
			# T's probes fail on purpose (no server), some with the
			# system's trust store named otherwise.
			env=(env) ign=()
			case $key in dead-*) ign=(-i) ;; esac
			case $key in
			dead-tls-system) env+=(-u SSL_CERT_FILE) ;;
			dead-tls-bundle) env+=("SSL_CERT_FILE=$BUNDLE") ;;
			esac
			if ! "${env[@]}" hyperfine -N "${ign[@]}" --style none --warmup "$warm" --min-runs 10 \
			    --max-runs "$max" --export-json "$TMP/hf-$key-$round.json" \
			    -n "$key" "$LINE" >"$TMP/hf-$key-$round.out" 2>&1; then
				log "A: $key failed: $(tail -n 3 "$TMP/hf-$key-$round.out")"
				continue
			fi
			hf_times "$TMP/hf-$key-$round.json" >>"$TMP/a-$key.ms"
		done
	done
}

# A's fast tools (all but the slow comparators) in rounds of one run
# each, the order turning (bench/tools/pairtime.c), so that the machine's
# drift slows a round's runs alike: their ratio to flock is taken round
# by round (PRATIO), where blocks of one tool's runs drift apart.
pair_rounds() {	# tool...
	local t i=0 dir=$TMP/pairs
	local -a args=()
	mkdir -p "$dir"
	for t in "$@"; do
		tool_cmd "$t" "bench-$t-a"
		args+=(-- "${CMD[@]}" true)
	done
	"$PAIRTIME" "$A_PAIRS" "$A_WARM" "$A_LIMIT" "$dir" "${args[@]}" ||
		log "A: a run failed; its rounds are left out"
	for t in "$@"; do
		cp "$dir/$i.ms" "$TMP/a-$t.ms"
		i=$((i + 1))
	done
	[[ " $* " == *" flock "* ]] || return 0
	for t in "$@"; do
		PRATIO[A,$t]=$(paste "$TMP/a-$t.ms" "$TMP/a-flock.ms" |
		    awk '$2 > 0 { print $1 / $2 }' | stats /dev/stdin |
		    awk '{ printf "%.4f", $1 }')
	done
}

bench_a() {
	local t s
	local -a fast=() slow=()
	for t in "${TOOLS[@]}"; do
		case $t in
		etcd | rcli | py) slow+=("$t") ;;
		*) fast+=("$t") ;;
		esac
	done
	if [ -n "$PAIRTIME" ]; then
		log "A: uncontended '${fast[*]}', $A_PAIRS rounds of one run each"
		pair_rounds "${fast[@]}"
	else
		slow=("${TOOLS[@]}")
	fi
	if [ "${#slow[@]}" -gt 0 ]; then
		log "A: uncontended '${slow[*]}' x $A_ROUNDS rounds (hyperfine)"
		hf_rounds "${slow[@]}"
	fi
	for t in "${TOOLS[@]}"; do
		[ -s "$TMP/a-$t.ms" ] || continue
		read -r med p25 p75 n < <(stats "$TMP/a-$t.ms")
		VAL[A,$t]=$med
		s=$(awk -v a="$p25" -v b="$p75" 'BEGIN { printf "%.6f", (b - a) / 2 }')
		SPREAD[A,$t]="$(ms "$med") ±$(ms "$s") ms"
		NOTE[A,$t]="$n runs"
		[ -n "${PRATIO[A,$t]:-}" ] && NOTE[A,$t]+=" in rounds of one run of each tool"
		[ -z "${PRATIO[A,$t]:-}" ] && NOTE[A,$t]+=" over $A_ROUNDS rounds"
	done
}

# ---------------------------------------------------------------------------
# B: workers x iterations of read-increment-write on a counter file.

# One round for one tool: appends its rate to b-TOOL.rate, or notes
# what went wrong (and then no rate counts for that tool).
bench_b_round() {
	local t=$1 iters=$2 counter="$TMP/b-$1.count" w wp=() t0 t1 rc final
	local want=$((B_WORKERS * iters))
	echo 0 >"$counter"
	tool_cmd "$t" "bench-$t-b"
	t0=$(now_us)
	for ((w = 0; w < B_WORKERS; w++)); do
		(
			fails=0 end=$((SECONDS + B_LIMIT))
			for ((i = 0; i < iters && SECONDS < end; i++)); do
				# shellcheck disable=SC2016 # expanded by sh
				"${CMD[@]}" sh -c 'read -r n <"$1"; echo $((n + 1)) >"$1"' \
				    sh "$counter" || fails=$((fails + 1))
			done
			[ "$i" -eq "$iters" ] && [ "$fails" -eq 0 ]
		) &
		wp+=("$!")
	done
	wait_bounded $((B_LIMIT + 10)) "${wp[@]}"
	rc=$?
	t1=$(now_us)
	read -r final <"$counter"
	if [ "$rc" -ne 0 ] || [ "$final" != "$want" ]; then
		BAD[B,$t]="WRONG: count $final of $want"
		[ "$rc" -ne 0 ] && BAD[B,$t]+=", a worker failed or timed out"
		log "B: $t: ${BAD[B,$t]}"
		return 1
	fi
	awk -v n="$want" -v us=$((t1 - t0)) 'BEGIN { printf "%.2f\n", n * 1e6 / us }' \
	    >>"$TMP/b-$t.rate"
}

# Rounds interleaved as in A; the slow comparators get one round of
# fewer iterations.
bench_b() {
	local t iters round rounds=$B_ROUNDS rates
	for ((round = 1; round <= rounds; round++)); do
		for t in "${TOOLS[@]}"; do
			iters=$B_ITERS
			case $t in
			base) continue ;;	# A and D only
			etcd | rcli | py) [ "$round" -eq 1 ] || continue; iters=$B_ITERS_SLOW ;;
			esac
			[ -z "${BAD[B,$t]:-}" ] || continue
			log "B: $t, $B_WORKERS workers x $iters, round $round"
			bench_b_round "$t" "$iters"
		done
	done
	for t in "${TOOLS[@]}"; do
		if [ -n "${BAD[B,$t]:-}" ]; then
			NOTE[B,$t]=${BAD[B,$t]}
			continue
		fi
		[ -s "$TMP/b-$t.rate" ] || continue
		read -r med _ _ n < <(stats "$TMP/b-$t.rate")
		VAL[B,$t]=$med
		rates=$(paste -sd' ' "$TMP/b-$t.rate" | awk '{ for (i = 1; i <= NF; i++) printf "%s%.0f", (i > 1 ? ", " : ""), $i }')
		case $t in
		etcd | rcli | py) iters=$B_ITERS_SLOW ;;
		*) iters=$B_ITERS ;;
		esac
		NOTE[B,$t]="$B_WORKERS×$iters, every count exact; handoffs/s per round: $rates"
	done
}

# ---------------------------------------------------------------------------
# C: hand-over latency.  The holder's last act is `exec date +%s%N`,
# so its stamp is taken just before its command exits; the waiter's
# command is `date +%s%N`, whose stamp is the first thing it does.
# latency = waiter's stamp - holder's stamp (so both include one exec
# of date, for every tool alike).

# One hand-over for one tool: appends the latency (us) to c-TOOL.us.
bench_c_once() {
	local t=$1 hp wp rc held="$TMP/c-held" e s
	rm -f "$held"
	tool_cmd "$t" "bench-$t-c"
	# shellcheck disable=SC2016 # expanded by sh
	"${CMD[@]}" sh -c ': >"$1"; sleep "$2"; exec date +%s%N' sh \
	    "$held" "$C_HOLD" >"$TMP/c-end" &
	hp=$!
	if ! wait_file "$held" 20; then
		log "C: $t: the holder did not get the lock"
		stop_pids "$hp"
		return 1
	fi
	"${CMD[@]}" date +%s%N >"$TMP/c-start" &
	wp=$!
	wait_bounded 30 "$hp" "$wp"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		log "C: $t: a holder or waiter failed (status $rc)"
		return 1
	fi
	read -r e <"$TMP/c-end" && read -r s <"$TMP/c-start" || return 1
	echo $(((s - e) / 1000)) >>"$TMP/c-$t.us"
}

# The tools take turns, one hand-over each, C_N times.
bench_c() {
	local t i
	declare -A failed=()
	log "C: $C_N hand-overs for each of ${TOOLS[*]}, in turn"
	for ((i = 0; i < C_N; i++)); do
		for t in "${TOOLS[@]}"; do
			[[ -z ${failed[$t]:-} && $t != base ]] || continue
			bench_c_once "$t" || failed[$t]=1
		done
	done
	for t in "${TOOLS[@]}"; do
		[ "$t" != base ] || continue
		if [ -n "${failed[$t]:-}" ]; then
			NOTE[C,$t]="failed"
			continue
		fi
		read -r med p25 p75 n < <(stats "$TMP/c-$t.us")
		VAL[C,$t]=$(awk -v v="$med" 'BEGIN { printf "%.4f", v / 1000 }')
		NOTE[C,$t]="$n; IQR $(awk -v a="$p25" -v b="$p75" 'BEGIN { printf "%.2f–%.2f", a / 1000, b / 1000 }') ms"
	done
}

# ---------------------------------------------------------------------------
# D: VmHWM of the process that holds the lock, read by the command from
# /proc/$PPID (the command is a child of the lock tool for every tool;
# for the redis-cli loop that is the bash running the loop).

bench_d() {
	local t i hwm anon
	for t in "${TOOLS[@]}"; do
		log "D: $t"
		tool_cmd "$t" "bench-$t-d"
		: >"$TMP/d-$t.kib"
		: >"$TMP/d-$t.anon"
		for ((i = 0; i < D_N; i++)); do
			# shellcheck disable=SC2016 # expanded by sh
			read -r hwm anon < <("${CMD[@]}" sh -c 'h= a=
				while read -r k v _; do
					case $k in VmHWM:) h=$v ;; RssAnon:) a=$v ;; esac
				done <"/proc/$PPID/status"
				echo "$h $a"')
			[ -n "$hwm" ] && echo "$hwm" >>"$TMP/d-$t.kib"
			[ -n "$anon" ] && echo "$anon" >>"$TMP/d-$t.anon"
		done
		[ -s "$TMP/d-$t.kib" ] || continue
		read -r med _ _ _ < <(stats "$TMP/d-$t.kib")
		VAL[D,$t]=$med
		read -r med _ _ _ < <(stats "$TMP/d-$t.anon")
		NOTE[D,$t]="$(awk -v v="$med" 'BEGIN { printf "%.0f", v }') KiB anonymous"
		# GNU time's %M: the largest of the tool and the processes it
		# waited for (its command, `true` here).
		: >"$TMP/d-$t.time"
		for ((i = 0; i < D_N; i++)); do
			/usr/bin/time -f %M -o "$TMP/d-time" "${CMD[@]}" true &&
			    tail -n 1 "$TMP/d-time" >>"$TMP/d-$t.time"
		done
		if [ -s "$TMP/d-$t.time" ]; then
			read -r med _ _ _ < <(stats "$TMP/d-$t.time")
			NOTE[D,$t]+="; \`/usr/bin/time -f %M\` $(awk -v v="$med" 'BEGIN { printf "%.0f", v }') KiB"
		fi
	done
}

# ---------------------------------------------------------------------------
# E: as C with WAITERS processes queued on the lock.  A holder takes the
# lock, WAITERS waiters `TOOL NAME date +%s%N >>stamps` are started and
# left to queue, then the holder lets go; once E_K hand-overs are
# stamped the remaining waiters are stopped.  The gaps between
# consecutive stamps are hand-overs measured as in C.

# How many are queued: redlock: clients connected to our server (less
# the holder's one and redis-cli's own); flock: blocked requests on our
# lock file's inode.
queued() {
	case $1 in
	redlock)
		redis-cli -h 127.0.0.1 -p "$RPORT" INFO clients 2>/dev/null |
		    tr -d '\r' | awk -F: '$1 == "connected_clients" { print $2 - 2 }' ;;
	flock)
		local ino
		ino=$(stat -c %i "$TMP/bench-flock-e.lock")
		awk -v ino="$ino" '$2 == "->" && $3 == "FLOCK" {
			n = split($7, f, ":"); if (f[n] == ino) c++ } END { print c + 0 }' /proc/locks ;;
	esac
}

bench_e_tool() {
	local t=$1 i q hp stamps="$TMP/e-$1.stamps" held="$TMP/e-held" go="$TMP/e-go"
	local waiters=() lines t0=$SECONDS
	rm -f "$held" "$go"
	: >"$stamps"
	tool_cmd "$t" "bench-$t-e"
	# shellcheck disable=SC2016 # expanded by sh
	"${CMD[@]}" sh -c ': >"$1"; i=0
		while [ ! -e "$2" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
		exec date +%s%N' sh "$held" "$go" >>"$stamps" &
	hp=$!
	wait_file "$held" 20 || { log "E: $t: the holder did not get the lock"; return 1; }
	for ((i = 0; i < WAITERS; i++)); do
		"${CMD[@]}" date +%s%N >>"$stamps" &
		waiters+=("$!")
	done
	log "E: $t: $WAITERS waiters started in $((SECONDS - t0)) s"
	for ((i = 0; i < 600; i++)); do
		q=$(queued "$t")
		[ "${q:-0}" -ge "$WAITERS" ] && break
		nap 0.1
	done
	if [ "${q:-0}" -lt "$WAITERS" ]; then
		log "E: $t: only ${q:-0} of $WAITERS waiters queued after 60 s"
		NOTE[E,$t]="only ${q:-0} queued; "
	fi
	log "E: $t: queued after $((SECONDS - t0)) s"
	nap 1	# let every waiter settle into its wait
	: >"$go"
	for ((i = 0; i < 600; i++)); do
		lines=$(wc -l <"$stamps")
		[ "$lines" -gt "$E_K" ] && break
		nap 0.1
	done
	log "E: $t: $E_K hand-overs after $((SECONDS - t0)) s"
	stop_pids "${waiters[@]}" "$hp"
	log "E: $t: stopped after $((SECONDS - t0)) s"
	sort -n "$stamps" | head -n $((E_K + 1)) |
	    awk 'NR > 1 { print int(($1 - p) / 1000) } { p = $1 }' >"$TMP/e-$t.us"
	[ "$lines" -gt "$E_K" ] || { log "E: $t: only $lines stamps in 60 s"; return 1; }
}

bench_e() {
	local t
	for t in "${TOOLS[@]}"; do
		case $t in redlock | flock) ;; *) continue ;; esac
		log "E: $t, $WAITERS waiters"
		bench_e_tool "$t" || continue
		read -r med p25 p75 n < <(stats "$TMP/e-$t.us")
		VAL[E,$t]=$(awk -v v="$med" 'BEGIN { printf "%.4f", v / 1000 }')
		NOTE[E,$t]+="$n; IQR $(awk -v a="$p25" -v b="$p75" 'BEGIN { printf "%.2f–%.2f", a / 1000, b / 1000 }') ms"
	done
}

# ---------------------------------------------------------------------------
# F: redlock with a quorum of 5 servers against 1 server.

bench_f() {
	local i med1 med5
	log "F: redlock, 5 servers against 1"
	QUORUM_URLS=(-u "redis://127.0.0.1:$RPORT")
	for ((i = 0; i < 4; i++)); do
		start_redis Q
		QUORUM_URLS+=(-u "redis://127.0.0.1:$Q_PORT")
	done
	# The 1-server figure is measured again here, interleaved with the
	# 5-server one, so that the ratio compares like with like.
	rm -f "$TMP/a-redlock1.ms" "$TMP/a-redlock5.ms"
	hf_rounds redlock1 redlock5
	[ -s "$TMP/a-redlock1.ms" ] && [ -s "$TMP/a-redlock5.ms" ] || return 1
	read -r med1 _ _ _ < <(stats "$TMP/a-redlock1.ms")
	read -r med5 _ _ _ < <(stats "$TMP/a-redlock5.ms")
	VAL[F,1]=$med1
	VAL[F,5]=$med5
}

# ---------------------------------------------------------------------------
# T: TLS.  A redis-server with a TLS port and a certificate for localhost
# made here by a CA of our own; redlock over rediss:// with --cacert, and
# redis-cli --tls doing the same lock (SET NX PX, the command, an EVAL
# release: two handshakes, as a script would), flock beside them.

tls_certs() {
	local d=$TMP/tls
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$d/ca.key" -out "$d/ca.crt" -days 1 -subj /CN=bench-ca \
	    2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$d/srv.key" -out "$d/srv.csr" -subj /CN=localhost 2>/dev/null &&
	printf 'subjectAltName=DNS:localhost\n' >"$d/srv.ext" &&
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
	    -CAcreateserial -days 1 -extfile "$d/srv.ext" -out "$d/srv.crt" 2>/dev/null
}

bench_t() {
	local t
	log "T: TLS, redlock and redis-cli --tls, with flock"
	command -v openssl >/dev/null || { log "T: no openssl"; return 1; }
	tls_certs || { log "T: cannot make certificates"; return 1; }
	TPORT=$(pick_port) || return 1
	start_redis TLS --tls-port "$TPORT" --tls-cert-file "$TMP/tls/srv.crt" \
	    --tls-key-file "$TMP/tls/srv.key" --tls-ca-cert-file "$TMP/tls/ca.crt" \
	    --tls-auth-clients no
	for t in tflock redlock-tls rcli-tls; do
		rm -f "$TMP/a-$t.ms"
	done
	hf_rounds tflock redlock-tls rcli-tls
	[ -s "$TMP/a-tflock.ms" ] && [ -s "$TMP/a-redlock-tls.ms" ] || return 1
	bench_t_parts
	for t in flock:tflock redlock:redlock-tls rcli:rcli-tls; do
		[ -s "$TMP/a-${t#*:}.ms" ] || continue
		read -r med p25 p75 n < <(stats "$TMP/a-${t#*:}.ms")
		VAL[T,${t%%:*}]=$med
		SPREAD[T,${t%%:*}]="$(ms "$med") ±$(ms "$(awk -v a="$p25" -v b="$p75" \
		    'BEGIN { printf "%.6f", (b - a) / 2 }')") ms"
		NOTE[T,${t%%:*}]=$n
	done
}

# Where a TLS run's time goes, from runs that stop at a port where
# nothing listens (connection refused): after loading OpenSSL and making
# the context (--insecure: no CA), after reading one CA file (--cacert),
# the system's hashed directory, the system's bundle file; the rest of
# a full TLS run beyond a plain one is the handshake, the verification
# and the encrypted I/O.  Medians, in TPARTS (ms).
declare -A TPARTS
bench_t_parts() {
	local k med
	local -a keys=(tplain redlock-tls dead-plain dead-tls-insecure dead-tls-ca dead-tls-system)
	DEADPORT=$(pick_port) || return 1
	BUNDLE=/etc/ssl/certs/ca-certificates.crt
	[ -r "$BUNDLE" ] && keys+=(dead-tls-bundle)
	for k in "${keys[@]}"; do
		[ "$k" = redlock-tls ] || rm -f "$TMP/a-$k.ms"
	done
	hf_rounds tplain dead-plain dead-tls-insecure dead-tls-ca dead-tls-system \
	    "${keys[@]:6}"
	for k in "${keys[@]}"; do
		[ -s "$TMP/a-$k.ms" ] || return 1
		read -r med _ _ _ < <(stats "$TMP/a-$k.ms")
		TPARTS[$k]=$med
	done
}

# "a - b" of two TPARTS, in ms as shown.
tpart() {
	awk -v a="${TPARTS[$1]:-}" -v b="${TPARTS[$2]:-}" \
	    'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%.2f ms", a - b }'
}

tls_notes() {
	[ -n "${TPARTS[dead-tls-ca]:-}" ] || return 0
	cat <<EOF

## TLS: where the time goes

A TLS run (\`redlock -u rediss://localhost:PORT --cacert CA NAME true\`,
$(ms "${TPARTS[redlock-tls]}") ms) against a plain one (\`redis://\`, $(ms "${TPARTS[tplain]}") ms), medians of
this run, from probes that stop at a port where nothing listens:

| part | time |
| --- | --- |
| loading libssl and libcrypto (dlopen) and making the SSL_CTX | $(tpart dead-tls-insecure dead-plain) |
| reading the CA file of \`--cacert\` | $(tpart dead-tls-ca dead-tls-insecure) |
| handshake, verification (chain, name) and TLS I/O: the rest | $(awk -v f="${TPARTS[redlock-tls]}" -v p="${TPARTS[tplain]}" \
	    -v c="${TPARTS[dead-tls-ca]}" -v d="${TPARTS[dead-plain]}" \
	    'BEGIN { printf "%.2f ms", (f - p) - (c - d) }') |
| without \`--cacert\`: the system's hashed CA directory instead | $(tpart dead-tls-system dead-tls-insecure) |
| without \`--cacert\`, with \`SSL_CERT_FILE\` naming the bundle | $(tpart dead-tls-bundle dead-tls-insecure) |

A closer look (strace -tt, perf, and a probe program timing each OpenSSL
call, on the machine of this run, 2026-11-24) splits the first part
into dlopen of the two libraries, about 0.8 ms (the dynamic loader
relocating libcrypto's symbols, most of perf's samples in ld.so's
do_lookup_x and _dl_relocate_object), and SSL_CTX_new, about 1.3 ms
(OpenSSL 3 reads openssl.cnf and fetches every cipher, digest and
signature algorithm from its default provider: perf's samples sit in
libcrypto's hash tables, OPENSSL_LH_*, and in pthread rwlocks).  Both
are paid once per process, and only by runs that use TLS: a plain run
never loads OpenSSL (linking it in cost every plain run 0.7 ms and
1.5 MiB, statically 0.24 ms and 1 MiB).  The handshake itself is one
round trip more than a plain connection (TLS 1.3, X25519 and an ECDSA
P-256 certificate).  Its arithmetic is small (\`openssl speed\`: an
X25519 exchange 26 us, an ECDSA P-256 verification 57 us, two of them
for the server's signature and its certificate); in strace's timeline
the client spends about 0.8 ms between the server's flight and its own
Finished, mostly decoding the certificate and building and checking the
chain through OpenSSL 3's providers, and the server about 0.4 ms before
it answers (its own key share and signature).  redis-cli
pays the same twice, once for its SET and once for its EVAL, in a
process that also links OpenSSL at start.  Loading the system's
CA bundle (some 140 certificates, parsed whole) costs about 20 ms, which
is why redlock reads the hashed directory instead when it can.
EOF
}

# ---------------------------------------------------------------------------
# The table

cell() {	# bench tool -> "value (ratio×)" as text
	local b=$1 t=$2 v=${VAL[$1,$2]:-} f=${VAL[$1,flock]:-} r
	if [ -z "$v" ]; then
		case $b in
		E) [[ $t == redlock || $t == flock ]] || { printf '—'; return; } ;;
		B | C) [ "$t" != base ] || { printf '—'; return; } ;;
		T) [[ $t == redlock || $t == flock || $t == rcli ]] || { printf '—'; return; } ;;
		esac
		printf '%s' "${NOTE[$b,$t]:-n/a}"
		return
	fi
	r=$(ratio "$v" "$f")
	[ "$b" = A ] && [ -n "${PRATIO[A,$t]:-}" ] && r=${PRATIO[A,$t]}
	case $b in
	A | T) printf '%s' "${SPREAD[$b,$t]}" ;;
	B) printf '%s/s' "$(awk -v v="$v" 'BEGIN { printf "%.0f", v }')" ;;
	C | E) printf '%s ms' "$(ms "$v")" ;;
	D) printf '%s MiB' "$(awk -v v="$v" 'BEGIN { printf "%.1f", v / 1024 }')" ;;
	esac
	[ -n "$r" ] && printf ' (%s)' "$(fmt_ratio "$r")"
	return 0
}

verdict() {	# ratio op target -> PASS / MISS / n/a
	if [ -z "$1" ]; then
		printf 'n/a'
	elif meets "$1" "$2" "$3"; then
		printf 'PASS'
	else
		printf 'MISS'
	fi
}

table() {
	local t b r what target op lim
	printf '| | measure |'
	for t in "${TOOLS[@]}"; do printf ' %s |' "${LABEL[$t]}"; done
	printf ' redlock ratio | target | |\n|---|---|'
	for t in "${TOOLS[@]}"; do printf -- '---|'; done
	printf -- '---|---|---|\n'
	for b in A B C D E; do
		[[ $ONLY == *$b* ]] || continue
		case $b in
		A) what="uncontended \`TOOL NAME true\`, median ±semi-IQR; ratio to flock: median over rounds of one run each"
		   r=${PRATIO[A,redlock]:-$(ratio "${VAL[A,redlock]:-}" "${VAL[A,flock]:-}")}
		   op=le lim=1.05 target="≤ 1.05× flock" ;;
		B) what="$B_WORKERS workers, counter under the lock: handoffs/s, median of rounds"
		   r=$(ratio "${VAL[B,redlock]:-}" "${VAL[B,flock]:-}")
		   op=ge lim=1.0 target="≥ 1.0× flock" ;;
		C) what="hand-over latency, median of $C_N"
		   r=$(ratio "${VAL[C,redlock]:-}" "${VAL[C,flock]:-}")
		   op=le lim=1.0 target="≤ 1.0× flock" ;;
		D) what="peak RSS of the lock process while holding"
		   r=$(ratio "${VAL[D,redlock]:-}" "${VAL[D,flock]:-}")
		   op=le lim=1.1 target="≤ 1.1× flock" ;;
		E) what="hand-over latency, $WAITERS waiters queued, median of $E_K"
		   r=$(ratio "${VAL[E,redlock]:-}" "${VAL[C,redlock]:-}")
		   op=le lim=2 target="≤ 2× redlock's C" ;;
		esac
		printf '| %s | %s |' "$b" "$what"
		for t in "${TOOLS[@]}"; do printf ' %s |' "$(cell "$b" "$t")"; done
		printf ' %s | %s | %s |\n' "$(fmt_ratio "$r")" "$target" "$(verdict "$r" "$op" "$lim")"
	done
	if [[ $ONLY == *F* ]]; then
		r=$(ratio "${VAL[F,5]:-}" "${VAL[F,1]:-}")
		# shellcheck disable=SC2016 # Markdown code, not an expansion
		printf '| F | quorum: %s against 1 server, medians |' '`redlock -u ×5 NAME true`'
		for t in "${TOOLS[@]}"; do
			if [ "$t" = redlock ] && [ -n "$r" ]; then
				printf ' %s ms vs %s ms |' "$(ms "${VAL[F,5]}")" "$(ms "${VAL[F,1]}")"
			else
				printf ' — |'
			fi
		done
		printf ' %s | ≤ 1.3× 1 server | %s |\n' "$(fmt_ratio "$r")" "$(verdict "$r" le 1.3)"
	fi
	if [[ $ONLY == *T* ]]; then
		r=$(ratio "${VAL[T,redlock]:-}" "${VAL[T,flock]:-}")
		# shellcheck disable=SC2016 # Markdown code, not an expansion
		printf '| T | TLS: %s over rediss://, median ±semi-IQR; redis-cli --tls: SET NX PX + EVAL release |' '`TOOL NAME true`'
		for t in "${TOOLS[@]}"; do printf ' %s |' "$(cell T "$t")"; done
		printf ' %s | ≤ redis-cli --tls | %s |\n' "$(fmt_ratio "$r")" \
		    "$(verdict "$(ratio "${VAL[T,redlock]:-}" "${VAL[T,rcli]:-}")" le 1)"
	fi
	[ -n "${H_OUT:-}" ] && sed -n 1p <<<"$H_OUT"
	return 0
}

notes() {
	local t
	echo
	echo "Each cell: the tool's figure and, in brackets, its ratio to flock(1)'s"
	echo "from the same run; the redlock column is the ratio the target applies"
	echo "to (E: redlock's E over its own C; F: 5 servers over 1)."
	if [[ " ${TOOLS[*]} " == *" floor "* ]]; then
		echo
		echo "The minimal Redis lock (bench/tools/lockfloor.c, queue) is what any"
		echo "lock kept in this Redis server, one process a run, costs here: one"
		echo "script that sets the key or joins the waiters, a wake-up list that"
		echo "a waiter blocks on with its next attempt queued behind, one"
		echo "check-and-delete that wakes one waiter.  No fencing token, holder"
		echo "record, guard or supervision; where it misses a target, so would"
		echo "any lock of this design on this machine."
	fi
	echo
	[[ $ONLY == *A* ]] && for t in "${TOOLS[@]}"; do
		[ -n "${NOTE[A,$t]:-}" ] && printf -- '- A %s: %s\n' "${LABEL[$t]}" "${NOTE[A,$t]}"
	done
	[[ $ONLY == *B* ]] && for t in "${TOOLS[@]}"; do
		[ -n "${NOTE[B,$t]:-}" ] && printf -- '- B %s: %s\n' "${LABEL[$t]}" "${NOTE[B,$t]}"
	done
	[[ $ONLY == *C* ]] && for t in "${TOOLS[@]}"; do
		[ -n "${NOTE[C,$t]:-}" ] && printf -- '- C %s: %s\n' "${LABEL[$t]}" "${NOTE[C,$t]}"
	done
	[[ $ONLY == *D* ]] && for t in "${TOOLS[@]}"; do
		[ -n "${NOTE[D,$t]:-}" ] && printf -- '- D %s: %s\n' "${LABEL[$t]}" "${NOTE[D,$t]}"
	done
	[[ $ONLY == *E* ]] && for t in redlock flock; do
		[ -n "${NOTE[E,$t]:-}" ] && printf -- '- E %s: %s\n' "${LABEL[$t]}" "${NOTE[E,$t]}"
	done
	echo "- Servers: redis-server $(redis-server --version | awk '{ print $3 }' | tr -d 'v=')" \
	    "on 127.0.0.1 (TCP, no persistence, maxclients 10000), one for redlock," \
	    "the redis-cli loop and redis-py${EPORT:+; etcd $(etcd --version 2>/dev/null |
	    awk '/etcd Version/ { print $3 }'), one member, data on tmpfs}."
	[[ $ONLY == *[CE]* ]] && cat <<'EOF'
- C, E: from the holder's last stamp (`exec date +%s%N` as its command's last
  act) to the next holder's `date +%s%N`; both include one exec of date.
EOF
	cat <<'EOF'
- A, B, C, F: the tools take turns (rounds in A, B, F; one hand-over each in
  C), so that a noisy neighbour hits them alike.
EOF
	[[ $ONLY == *B* ]] && cat <<EOF
- B: the slow comparators run one round of $B_ITERS_SLOW iterations a worker instead of
  $B_ROUNDS of $B_ITERS, to keep the run short; handoffs/s is a rate, so it compares.
EOF
	[[ $ONLY == *D* ]] && cat <<'EOF'
- D: VmHWM of the lock tool's own process (its command's memory excluded; for
  the redis-cli loop, the bash that runs it), mostly shared library pages; the
  anonymous (private) part is listed above.  redlock also runs a small guard
  process while it holds, not counted here.
EOF
	[[ $ONLY == *E* ]] && cat <<'EOF'
- E: redlock and flock only: 1,000 Python or etcdctl processes do not fit
  this machine, and 1,000 redis-cli loops would only measure polling.
EOF
	[[ $ONLY == *F* ]] && cat <<'EOF'
- F: five redis-servers on this same machine; the 1-server figure is measured
  again beside the 5-server one, not taken from A.
EOF
	[[ $ONLY == *T* ]] && {
		for t in flock redlock rcli; do
			[ -n "${NOTE[T,$t]:-}" ] && printf -- '- T %s: %s runs over %s rounds\n' \
			    "$([ "$t" = rcli ] && echo 'redis-cli --tls' || echo "${LABEL[$t]}")" \
			    "${NOTE[T,$t]}" "$A_ROUNDS"
		done
		cat <<'EOF'
- T: one more redis-server with a TLS port (TLS 1.3, an ECDSA P-256
  certificate for localhost from a CA made for the run, no client
  certificates); redlock verifies chain and name (--cacert); flock is
  measured again beside the TLS tools.  Where a TLS run's extra time goes:
  see "TLS: where the time goes" below.
EOF
	}
	if [ -n "$BASELINE" ]; then
		printf -- '- Baseline: %s (%s), in A and D only; redlock against it: A %s, D %s.\n' \
		    "$BASELINE" "$("$BASELINE" --version 2>/dev/null)" \
		    "$(fmt_ratio "$(ratio "${VAL[A,redlock]:-}" "${VAL[A,base]:-}")")" \
		    "$(fmt_ratio "$(ratio "${VAL[D,redlock]:-}" "${VAL[D,base]:-}")")"
	fi
	[ -n "${H_OUT:-}" ] && sed -n '2,$p' <<<"$H_OUT"
	[[ " ${TOOLS[*]} " == *" py "* || " ${TOOLS[*]} " == *" rcli "* ]] && cat <<'EOF'
- redis-py Lock with its defaults polls a busy lock every 0.1 s; the redis-cli
  loop polls every 10 ms.
EOF
	echo "- Locale of the tools: LANG=${LANG:-unset}, LC_ALL=${LC_ALL:-unset}."
	echo "- Load average before / after: $LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)" \
	    "(other work on the machine adds noise)."
	for t in etcd py; do
		[[ " ${TOOLS[*]} " == *" $t "* ]] || [ -z "${MISSING[$t]:-}" ] ||
		    printf -- '- %s: %s\n' "${LABEL[$t]}" "${MISSING[$t]}"
	done
}

# ---------------------------------------------------------------------------
# Main

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
need=()
for c in hyperfine redis-server redis-cli flock pgrep; do
	command -v "$c" >/dev/null 2>&1 || need+=("$c")
done
[ -x /usr/bin/time ] || need+=(/usr/bin/time)
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		log "missing ${need[*]}: running bench/setup.sh"
		"$BENCH/setup.sh" || die "bench/setup.sh failed"
	else
		die "missing ${need[*]}: run bench/setup.sh (as root)"
	fi
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-bench.XXXXXX") || die "mktemp failed"
# 1,000 waiters and their server connections.
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

# The minimal Redis lock (bench/lib.sh builds it).
FLOOR=$TMP/lockfloor

# Row A's timer (bench/tools/pairtime.c); without it, A is hyperfine's.
PAIRTIME=$TMP/pairtime
cc -O2 -std=c11 -D_GNU_SOURCE -o "$PAIRTIME" "$BENCH/tools/pairtime.c" 2>/dev/null ||
    PAIRTIME=

declare -A MISSING
read -ra want <<<"${BENCH_TOOLS:-redlock fair floor flock etcd rcli py}"
TOOLS=()
for t in "${want[@]}"; do
	case $t in
	redlock | fair | flock | rcli) TOOLS+=("$t") ;;
	floor)
		if build_lockfloor "$FLOOR"; then
			TOOLS+=(floor)
		else
			MISSING[floor]="bench/tools/lockfloor.c did not build; column skipped"
		fi ;;
	etcd)
		if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
			TOOLS+=(etcd)
		else
			MISSING[etcd]="not installed (etcd-server, etcd-client: bench/setup.sh); column skipped"
		fi ;;
	py)
		if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import redis' 2>/dev/null; then
			TOOLS+=(py)
		else
			MISSING[py]="not installed (python3-redis: bench/setup.sh); column skipped"
		fi ;;
	*) die "unknown tool '$t' in BENCH_TOOLS" ;;
	esac
done
if [ -n "$BASELINE" ]; then
	[ -x "$BASELINE" ] || die "BENCH_BASELINE: no executable $BASELINE"
	TOOLS=("${TOOLS[0]}" base "${TOOLS[@]:1}")
fi

start_redis MAIN --maxclients 10000
RPORT=$MAIN_PORT
EPORT=
if [[ " ${TOOLS[*]} " == *" etcd "* ]] && ! start_etcd; then
	MISSING[etcd]="etcd did not start; column skipped"
	kept=()
	for t in "${TOOLS[@]}"; do
		[ "$t" = etcd ] || kept+=("$t")
	done
	TOOLS=("${kept[@]}")
fi
log "redis-server on 127.0.0.1:$RPORT${EPORT:+, etcd on 127.0.0.1:$EPORT}; tools: ${TOOLS[*]}"

started=$SECONDS
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
[[ $ONLY == *A* ]] && bench_a
[[ $ONLY == *B* ]] && bench_b
[[ $ONLY == *C* ]] && bench_c
[[ $ONLY == *D* ]] && bench_d
[[ $ONLY == *E* ]] && bench_e
[[ $ONLY == *F* ]] && { bench_f || log "F: failed"; }
if [[ $ONLY == *H* ]]; then
	log "H: redlock --limit 4, 8 workers"
	H_OUT=$("$BENCH/semaphore.sh" --port "$RPORT" --row "${TOOLS[@]}") ||
	    log "H: failed"
fi
[[ $ONLY == *I* ]] && { "$BENCH/cluster.sh" >"$TMP/i.md" || log "I: failed"; }
[[ $ONLY == *J* ]] && { REDLOCK=$REDLOCK BENCH_QUICK=$QUICK "$BENCH/record.sh" >"$TMP/j.md" ||
    log "J: failed"; }
[[ $ONLY == *S* ]] && { REDLOCK=$REDLOCK BENCH_QUICK=$QUICK "$BENCH/server-cpu.sh" >"$TMP/s.md" ||
    log "S: failed"; }
[[ $ONLY == *T* ]] && { bench_t || log "T: failed"; }

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
	echo "# redlock benchmarks"
	echo
	echo "\`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $(uname -m), ${cpu:-unknown CPU}," \
	    "$(nproc) cores, Linux $(uname -r), redlock $("$REDLOCK" --version | awk '{ print $2 }');" \
	    "took $((SECONDS - started)) s."
	echo
	table
	notes
	[ -s "$TMP/i.md" ] && { echo; cat "$TMP/i.md"; }
	[ -s "$TMP/j.md" ] && { echo; cat "$TMP/j.md"; }
	[ -s "$TMP/s.md" ] && { echo; cat "$TMP/s.md"; }
	# Measured apart (bench/guard-cost.sh), kept with the results.
	if [[ -f $BENCH/guard-cost.md ]]; then
		echo
		cat "$BENCH/guard-cost.md"
	fi
	tls_notes
} >"$TMP/results.md"
if [[ $ONLY == *G* ]]; then
	log "G: bench/fleet.sh"
	REDLOCK=$REDLOCK BENCH_QUICK=$QUICK "$BENCH/fleet.sh" >>"$TMP/results.md" ||
	    log "G: failed"
fi
cp "$TMP/results.md" "$RESULTS"
cat "$TMP/results.md"
log "written to ${RESULTS#"$ROOT"/}"
