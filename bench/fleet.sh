#!/bin/bash
# bench/fleet.sh - the fleet rows of `make bench` (G1-G5):
# what redlock costs a Redis server that many hosts share.  Called by
# bench/run.sh (BENCH_ONLY containing G); runs alone as well.  Prints a
# Markdown section on stdout, progress on stderr.
#
#   G1  FLEET_N holders of distinct names at once against a server with
#       maxclients FLEET_N + 50: every one exits with its command's
#       status (7); connections, memory and tasks while they hold; what
#       limits N on this machine
#   G2  keys and used_memory before, when they have all finished, and
#       FLEET_LINGER seconds later (the fence counter lingers 50 s after
#       the last grant):
#       nothing of redlock's may remain
#   G3  Redis server CPU per `redlock NAME true` against one `redis-cli
#       PING` run, FLEET_RUNS runs each, taking turns, each tool on a
#       server of its own; beside them the floor of any lock around a
#       command (bench/tools/lockfloor.c: one hiredis connection, `SET
#       NX PX`, then a check-and-delete EVALSHA), with and without
#       running `true` in between
#   G4  server time of the commands per acquire+release (INFO
#       commandstats: the top-level commands, which include the
#       commands the scripts call): `redlock NAME true` against
#       redis-py's Lock in a process of its own (bench/tools/pylock),
#       FLEET_PY_RUNS each, taking turns
#   G5  one renewal: commandstats and server CPU over a window in which
#       20 holders with -t 300ms renew and nothing else happens; beside
#       them 20 lockfloor holders extending with a check-and-PEXPIRE
#       script every 100 ms; each kind on a fresh server of its own
#
# Server CPU is read from /proc/PID: utime+stime (as the issue asks,
# 1/CLK_TCK resolution) and the tasks' schedstat run time (ns), with
# the idle server's own rate (its cron, measured first) subtracted.
#
# Environment: FLEET_N (1000), FLEET_RUNS (3000), FLEET_PY_RUNS (300),
# FLEET_LINGER (61), BENCH_QUICK=1 (N 200, 300 and 30 runs).
set -u -o pipefail

awk() { LC_ALL=C command awk "$@"; }

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
REDLOCK=${REDLOCK:-$ROOT/redlock}

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	N=${FLEET_N:-200} RUNS=${FLEET_RUNS:-300} PY_RUNS=${FLEET_PY_RUNS:-30}
else
	N=${FLEET_N:-1000} RUNS=${FLEET_RUNS:-3000} PY_RUNS=${FLEET_PY_RUNS:-300}
fi
LINGER=${FLEET_LINGER:-61}
RENEWERS=20

log() { printf "fleet: [%3ds] %s\n" "$SECONDS" "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------------------
# Processes: every server and holder is a child of this script, stopped
# by pid on exit.

TMP=''
SERVERS=()
HOLDERS=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	# Holders first (their process groups: the command and the guard
	# die with redlock), then the servers.
	stop_pids "${HOLDERS[@]}"
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

# cmdstats PORT: "command calls usec" lines from INFO commandstats.
cmdstats() {
	rcli "$1" INFO commandstats | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_/ { sub(/^cmdstat_/, "", $1); print $1, $3, $5 }'
}

# cpu PID: "schedstat-ns ticks" of the process, all its threads.
cpu() {
	local f ns=0 a st
	for f in /proc/"$1"/task/*/schedstat; do
		read -r a _ <"$f" && ns=$((ns + a))
	done
	read -r st <"/proc/$1/stat"
	st=${st##*) }
	# shellcheck disable=SC2086 # split on purpose: fields of stat
	set -- $st
	echo "$ns $((${12} + ${13}))"
}

# The idle server's CPU in ns per second (its cron), over 2 s.
idle_rate() {
	local a b t0 t1
	read -r a _ < <(cpu "$1")
	t0=$(now_us)
	sleep 2
	read -r b _ < <(cpu "$1")
	t1=$(now_us)
	awk -v d=$((b - a)) -v t=$((t1 - t0)) 'BEGIN { printf "%.0f", d * 1e6 / t }'
}

calc() { awk "BEGIN { printf $1 }"; }

# Release holders whose command is `read -r x <FIFO`: open the FIFO as
# a writer and close it (the readers see EOF), again every 0.2 s for a
# reader that was not yet blocked, until the pids end (at most 60 s).
# Kills what is left.  Then reaps them and writes "status count" lines
# to OUT (not a command substitution: only this shell can reap them).
release_all() {
	local out=$1 fifo=$2 i p rc
	shift 2
	for ((i = 0; i < 300; i++)); do
		exec 9<>"$fifo"
		exec 9>&-
		any_alive "$@" || break
		sleep 0.2
	done
	any_alive "$@" && { log "holders still running after 60 s: killed"; stop_pids "$@"; }
	: >"$out.raw"
	for p in "$@"; do
		wait "$p"
		rc=$?
		echo "$rc" >>"$out.raw"
	done
	sort -n "$out.raw" | uniq -c | awk '{ print $2, $1 }' >"$out"
}

# "N× STATUS, ..." from release_all's file.
statuses() { awk '{ printf "%s%s× %s", (NR > 1 ? ", " : ""), $2, $1 }' "$1"; }

# How many tasks (threads of every process) exist.
tasks() { local t=(/proc/[0-9]*/task/[0-9]*); echo "${#t[@]}"; }
mem_available() { awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo; }

# Keys of redlock's on a server (the prefix is redlock:, auxiliary keys
# are {redlock:...}\0...).
redlock_keys() {
	rcli "$1" --scan --pattern '*redlock:*' | wc -l
}

# ttl_survey PORT: "largest-PTTL keys-without-expiry" over every key
# (one script, so keys with NUL bytes need no quoting).
ttl_survey() {
	rcli "$1" EVAL "local m, n, c = -2, 0, '0'
		repeat
			local r = redis.call('SCAN', c, 'COUNT', 1000)
			c = r[1]
			for _, k in ipairs(r[2]) do
				local t = redis.call('PTTL', k)
				if t > m then m = t end
				if t == -1 then n = n + 1 end
			end
		until c == '0'
		return {m, n}" 0 | paste -sd' ' -
}

# ---------------------------------------------------------------------------
# G1 and G2

declare -A R

bench_g1() {
	local i fifo="$TMP/g1.fifo" t0 t1 t2 held c k0 m0 mem0 tasks0 s0 s1 r0 r1 w0 w1
	start_redis G1 --maxclients $((N + 50))
	mkfifo "$fifo"
	k0=$(rcli "$G1_PORT" DBSIZE)
	m0=$(info "$G1_PORT" memory used_memory)
	mem0=$(mem_available)
	tasks0=$(tasks)
	log "G1: starting $N holders of distinct names (maxclients $((N + 50)))"
	t0=$(now_us)
	for ((i = 0; i < N; i++)); do
		# shellcheck disable=SC2016 # expanded by sh
		"$REDLOCK" -u "redis://127.0.0.1:$G1_PORT" -t 2s "fleet-$i" \
		    sh -c 'read -r x <"$0"; exit 7' "$fifo" 2>>"$TMP/g1.err" &
		HOLDERS+=("$!")
	done
	t1=$(now_us)
	for ((i = 0; i < 600; i++)); do
		held=$(rcli "$G1_PORT" --scan --pattern 'redlock:fleet-*' | wc -l)
		[ "$held" -ge "$N" ] && break
		sleep 0.2
	done
	t2=$(now_us)
	log "G1: $held held after $(calc "\"%.1f\", $((t2 - t0)) / 1e6") s"
	R[g1_spawn_s]=$(calc "\"%.2f\", $((t1 - t0)) / 1e6")
	R[g1_held_s]=$(calc "\"%.2f\", $((t2 - t0)) / 1e6")
	R[g1_held]=$held
	# Hold 5 s: about 7 renewals each (every 667 ms).  Server CPU and
	# commandstats over that window: renewals at scale.
	read -r s0 _ < <(cpu "$G1_PID")
	r0=$(eval_stats "$G1_PORT")
	w0=$(now_us)
	R[g1_clients]=$(info "$G1_PORT" clients connected_clients)
	sleep 5
	c=$(info "$G1_PORT" clients connected_clients)
	[ "$c" -gt "${R[g1_clients]}" ] && R[g1_clients]=$c
	# Renewal threads start when the first renewal is due: count now.
	R[g1_tasks]=$(($(tasks) - tasks0))
	R[g1_mem_kb]=$((mem0 - $(mem_available)))
	R[g1_used_held]=$(info "$G1_PORT" memory used_memory)
	w1=$(now_us)
	r1=$(eval_stats "$G1_PORT")
	read -r s1 _ < <(cpu "$G1_PID")
	read -r "R[g1_renewals]" "R[g1_renew_lua]" "R[g1_renew_cpu]" < <(per_call "$r0" "$r1" "$s0" "$s1" $((w1 - w0)))
	log "G1: releasing"
	release_all "$TMP/g1.status" "$fifo" "${HOLDERS[@]}"
	HOLDERS=()
	R[g1_done]=$(now_us)
	R[g1_status]=$(statuses "$TMP/g1.status")
	R[g1_ok]=$(awk '$1 == 7 { print $2 }' "$TMP/g1.status")
	R[g1_err_lines]=$(wc -l <"$TMP/g1.err")
	R[g1_err_top]=$(sort "$TMP/g1.err" | uniq -c | sort -rn | head -n 2 |
	    awk '{ $1 = $1 "×"; print }' | paste -sd';' -)
	R[g1_k0]=$k0 R[g1_m0]=$m0
	R[g1_k1]=$(rcli "$G1_PORT" DBSIZE)
	R[g1_r1]=$(redlock_keys "$G1_PORT")
	R[g1_m1]=$(info "$G1_PORT" memory used_memory)
	read -r "R[g1_ttl_max]" "R[g1_no_ttl]" < <(ttl_survey "$G1_PORT")
	log "G1: all done: ${R[g1_status]}; ${R[g1_k1]} keys left, the minute runs"
}

# G2's last look, FLEET_LINGER s after the last holder finished.
bench_g2() {
	local left
	left=$(((R[g1_done] + LINGER * 1000000 - $(now_us)) / 1000000))
	if [ "$left" -gt 0 ]; then
		log "G2: waiting ${left} s more for the linger"
		sleep "$left"
	fi
	R[g2_after_s]=$(calc "\"%.0f\", ($(now_us) - ${R[g1_done]}) / 1e6")
	R[g1_k2]=$(rcli "$G1_PORT" DBSIZE)
	R[g1_r2]=$(redlock_keys "$G1_PORT")
	R[g1_m2]=$(info "$G1_PORT" memory used_memory)
}

# ---------------------------------------------------------------------------
# G3 and G4

# Per run: "µs-schedstat µs-ticks" of a server from cpu lines a and b,
# over runs, less the idle rate over us microseconds.
per_run() {
	awk -v a="$1" -v b="$2" -v runs="$3" -v us="$4" -v idle="$IDLE" -v tck="$TCK" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		printf "%.1f %.1f", (y[1] - x[1] - idle * us / 1e6) / 1000 / runs,
		    ((y[2] - x[2]) * 1e6 / tck - idle * us / 1e9) / runs }'
}

# Build bench/tools/lockfloor.c into $FLOOR (hiredis linked as redlock
# links it: statically when the archive is there).  FLOOR stays empty
# when it cannot be built.
build_floor() {
	FLOOR=$TMP/lockfloor
	build_lockfloor "$FLOOR" || FLOOR=
	[ -n "$FLOOR" ] || log "cannot build bench/tools/lockfloor.c: no floor rows"
}

CAD='if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0'
EXT='if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0'

# One round of G3: redlock, redis-cli PING, the floors.
g3_round() {
	"$REDLOCK" -u "redis://127.0.0.1:$GA_PORT" cpu true || R[g3_fail]=1
	rcli "$GB_PORT" PING >/dev/null
	[ -n "$FLOOR" ] || return 0
	"$FLOOR" run "$GE_PORT" floor "$SHA_E" || R[g3_fail]=1
	"$FLOOR" run "$GC_PORT" floor "$SHA_C" true || R[g3_fail]=1
}

bench_g3() {
	local i a0 a1 b0 b1 e0 e1 c0 c1 t0 t1 p
	start_redis GA
	start_redis GB
	start_redis GE
	start_redis GC
	SHA_E=$(rcli "$GE_PORT" SCRIPT LOAD "$CAD")
	SHA_C=$(rcli "$GC_PORT" SCRIPT LOAD "$CAD")
	# Warm up: the scripts are loaded, the binaries cached.
	for ((i = 0; i < 20; i++)); do
		g3_round
	done
	for p in "$GA_PORT" "$GB_PORT" "$GE_PORT" "$GC_PORT"; do
		rcli "$p" CONFIG RESETSTAT >/dev/null
	done
	log "G3: $RUNS runs each of redlock NAME true, redis-cli PING and the floors, in turn"
	a0=$(cpu "$GA_PID") b0=$(cpu "$GB_PID") e0=$(cpu "$GE_PID") c0=$(cpu "$GC_PID")
	t0=$(now_us)
	for ((i = 0; i < RUNS; i++)); do
		g3_round
	done
	t1=$(now_us)
	a1=$(cpu "$GA_PID") b1=$(cpu "$GB_PID") e1=$(cpu "$GE_PID") c1=$(cpu "$GC_PID")
	read -r "R[g3_rl]" "R[g3_rl_t]" < <(per_run "$a0" "$a1" "$RUNS" $((t1 - t0)))
	read -r "R[g3_ping]" "R[g3_ping_t]" < <(per_run "$b0" "$b1" "$RUNS" $((t1 - t0)))
	if [ -n "$FLOOR" ]; then
		read -r "R[g3_floor]" _ < <(per_run "$e0" "$e1" "$RUNS" $((t1 - t0)))
		read -r "R[g3_floorcmd]" _ < <(per_run "$c0" "$c1" "$RUNS" $((t1 - t0)))
	fi
	R[g3_s]=$(calc "\"%.0f\", $((t1 - t0)) / 1e6")
	# What the runs asked of the server: calls and µs per run.
	cmdstats "$GA_PORT" | awk -v n="$RUNS" '$1 !~ /^(info|config)/ {
		printf "%s %.2f %.2f\n", $1, $2 / n, $3 / n }' | sort -k3,3 -rn >"$TMP/g3.cmds"
}

# Top-level command µs per run: eval* for redlock, set + eval* for
# redis-py (whose acquire is a plain SET NX PX).
top_us() {
	cmdstats "$1" | awk -v n="$2" -v set="$3" '
		$1 ~ /^eval/ || (set && $1 == "set") { u += $3 } END { printf "%.1f", u / n }'
}

bench_g4() {
	local i
	if ! { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import redis' 2>/dev/null; }; then
		R[g4_py]="n/a (python3-redis not installed)"
		return 0
	fi
	start_redis GP
	for ((i = 0; i < 3; i++)); do
		"$BENCH/tools/pylock" "$GP_PORT" lua true
	done
	rcli "$GP_PORT" CONFIG RESETSTAT >/dev/null
	rcli "$GA_PORT" CONFIG RESETSTAT >/dev/null
	log "G4: $PY_RUNS runs each of redlock and redis-py Lock, in turn"
	for ((i = 0; i < PY_RUNS; i++)); do
		"$REDLOCK" -u "redis://127.0.0.1:$GA_PORT" lua true
		"$BENCH/tools/pylock" "$GP_PORT" lua true
	done
	R[g4_rl]=$(top_us "$GA_PORT" "$PY_RUNS" 0)
	R[g4_py]=$(top_us "$GP_PORT" "$PY_RUNS" 1)
	cmdstats "$GP_PORT" | awk -v n="$PY_RUNS" '$1 !~ /^(info|config)/ {
		printf "%s %.2f %.2f\n", $1, $2 / n, $3 / n }' | sort -k3,3 -rn >"$TMP/g4.py"
}

# ---------------------------------------------------------------------------
# G5: renewals alone in a window.

# "calls usec" of the eval commands on a server.
eval_stats() {
	cmdstats "$1" | awk '$1 ~ /^eval/ { c += $2; u += $3 } END { print c + 0, u + 0 }'
}

# per_call EVAL0 EVAL1 CPU0 CPU1 US: "calls µs-of-commands µs-of-CPU"
# per eval call over a window of US µs (the server's idle rate less).
per_call() {
	awk -v a="$1" -v b="$2" -v c0="$3" -v c1="$4" -v us="$5" -v idle="$IDLE" 'BEGIN {
		split(a, x, " "); split(b, y, " "); n = y[1] - x[1]
		if (n <= 0) { print 0, "nan", "nan"; exit }
		printf "%d %.1f %.1f\n", n, (y[2] - x[2]) / n, (c1 - c0 - idle * us / 1e6) / 1000 / n }'
}

bench_g5() {
	local i fifo="$TMP/g5.fifo" held s0 s1 g0 g1 r0 r1 f0 f1 w0 w1 floors=()
	mkfifo "$fifo"
	# Two fresh servers, one for each kind of holder, so that neither
	# carries what G1-G4 did to the other servers.
	start_redis GR
	start_redis GF
	SHA_F=$(rcli "$GF_PORT" SCRIPT LOAD "$EXT")
	log "G5: $RENEWERS holders renewing every 100 ms (-t 300ms)"
	for ((i = 0; i < RENEWERS; i++)); do
		# shellcheck disable=SC2016 # expanded by sh
		"$REDLOCK" -u "redis://127.0.0.1:$GR_PORT" -t 300ms "renew-$i" \
		    sh -c 'read -r x <"$0"; exit 7' "$fifo" 2>>"$TMP/g5.err" &
		HOLDERS+=("$!")
	done
	for ((i = 0; i < 200; i++)); do
		held=$(rcli "$GR_PORT" --scan --pattern 'redlock:renew-*' | wc -l)
		[ "$held" -ge "$RENEWERS" ] && break
		sleep 0.1
	done
	if [ -n "$FLOOR" ]; then
		# 80 extensions, 100 ms apart: past the window's end.
		for ((i = 0; i < RENEWERS; i++)); do
			"$FLOOR" hold "$GF_PORT" "floor-$i" "$SHA_F" 100 80 &
			floors+=("$!")
		done
		for ((i = 0; i < 100; i++)); do
			[ "$(rcli "$GF_PORT" DBSIZE)" -ge "$RENEWERS" ] && break
			sleep 0.05
		done
	fi
	r0=$(eval_stats "$GR_PORT") f0=$(eval_stats "$GF_PORT")
	read -r s0 _ < <(cpu "$GR_PID")
	read -r g0 _ < <(cpu "$GF_PID")
	w0=$(now_us)
	sleep 5
	read -r s1 _ < <(cpu "$GR_PID")
	read -r g1 _ < <(cpu "$GF_PID")
	w1=$(now_us)
	r1=$(eval_stats "$GR_PORT") f1=$(eval_stats "$GF_PORT")
	read -r "R[g5_n]" "R[g5_lua]" "R[g5_cpu]" < <(per_call "$r0" "$r1" "$s0" "$s1" $((w1 - w0)))
	read -r "R[g5_fn]" "R[g5_flua]" "R[g5_fcpu]" < <(per_call "$f0" "$f1" "$g0" "$g1" $((w1 - w0)))
	release_all "$TMP/g5.status" "$fifo" "${HOLDERS[@]}"
	R[g5_status]=$(statuses "$TMP/g5.status")
	HOLDERS=()
	if [ "${#floors[@]}" -gt 0 ]; then
		for ((i = 0; i < 200; i++)); do
			any_alive "${floors[@]}" || break
			sleep 0.1
		done
		stop_pids "${floors[@]}"
	fi
}

# ---------------------------------------------------------------------------
# The section

verdict() { awk -v r="$1" -v t="$3" -v op="$2" \
	'BEGIN { print ((op == "le" ? r <= t : r >= t) ? "PASS" : "MISS") }'; }

kib() { calc "\"%.0f KiB\", $1 / 1024"; }

# shellcheck disable=SC2016 # Markdown code in printf formats
section() {
	local r_cpu r_cpu_t r_lua nofile pidmax per_task per_mem
	r_cpu=$(calc "\"%.2f\", ${R[g3_rl]} / ${R[g3_ping]}")
	r_cpu_t=$(calc "\"%.2f\", ${R[g3_rl_t]} / ${R[g3_ping_t]}")
	echo
	echo "## Fleet scale (bench/fleet.sh)"
	echo
	echo "| | measure | redlock | comparator | ratio | target | |"
	echo "|---|---|---|---|---|---|---|"
	printf '| G1 | %s holders of distinct names at once, `-t 2s`, maxclients %s: exit statuses (the command exits 7) | %s | — | — | all %s | %s |\n' \
	    "$N" $((N + 50)) "${R[g1_status]}" "$N" \
	    "$([ "${R[g1_ok]:-0}" = "$N" ] && echo PASS || echo MISS)"
	printf '| G2 | keys / used_memory: before → all finished → %s s later | %s / %s → %s / %s → %s / %s | — | — | no redlock key | %s |\n' \
	    "${R[g2_after_s]}" "${R[g1_k0]}" "$(kib "${R[g1_m0]}")" "${R[g1_k1]}" "$(kib "${R[g1_m1]}")" \
	    "${R[g1_k2]}" "$(kib "${R[g1_m2]}")" "$([ "${R[g1_r2]}" = 0 ] && echo PASS || echo MISS)"
	printf '| G3 | Redis CPU per `redlock NAME true` vs per `redis-cli PING` run, %s runs each | %s µs | %s µs | %s× | ≤ 1.2× | %s |\n' \
	    "$RUNS" "${R[g3_rl]}" "${R[g3_ping]}" "$r_cpu" "$(verdict "$r_cpu" le 1.2)"
	[ -n "${R[g3_floorcmd]:-}" ] &&
	    printf '| G3′ | the same against the floor of a lock around a command (lockfloor: `SET NX PX`, runs `true`, check-and-delete) | %s µs | %s µs | %s× | — | |\n' \
		"${R[g3_rl]}" "${R[g3_floorcmd]}" "$(calc "\"%.2f\", ${R[g3_rl]} / ${R[g3_floorcmd]}")"
	if [[ ${R[g4_py]} == n/a* ]]; then
		printf '| G4 | command time per acquire+release (commandstats) vs redis-py Lock | %s µs | %s | — | ≤ 2× | n/a |\n' \
		    "${R[g4_rl]:-?}" "${R[g4_py]}"
	else
		r_lua=$(calc "\"%.2f\", ${R[g4_rl]} / ${R[g4_py]}")
		printf '| G4 | command time per acquire+release (commandstats), %s processes each: redlock vs redis-py Lock | %s µs | %s µs | %s× | ≤ 2× | %s |\n' \
		    "$PY_RUNS" "${R[g4_rl]}" "${R[g4_py]}" "$r_lua" "$(verdict "$r_lua" le 2)"
	fi
	printf '| G5 | one renewal: command time (commandstats) / Redis CPU, %s renewals; comparator: a check-and-PEXPIRE script (lockfloor) | %s µs / %s µs | %s | %s | ≤ 10 µs | %s |\n' \
	    "${R[g5_n]}" "${R[g5_lua]}" "${R[g5_cpu]}" \
	    "${R[g5_flua]:+${R[g5_flua]} µs / ${R[g5_fcpu]} µs}" \
	    "${R[g5_flua]:+$(calc "\"%.2f× / %.2f×\", ${R[g5_lua]} / ${R[g5_flua]}, ${R[g5_cpu]} / ${R[g5_fcpu]}")}" \
	    "$(verdict "${R[g5_lua]}" le 10)"
	echo
	echo "- G1: all $N held $(printf %s "${R[g1_held_s]}") s after the first start (started in ${R[g1_spawn_s]} s);" \
	    "while they held: ${R[g1_clients]} clients connected (one a holder, plus the bench's redis-cli)," \
	    "used_memory $(kib "${R[g1_used_held]}"), $(calc "\"%.0f\", ${R[g1_mem_kb]} / $N") KiB of" \
	    "MemAvailable and $(calc "\"%.1f\", ${R[g1_tasks]} / $N") tasks per holder (redlock and its renewal thread," \
	    "the guard, the command)."
	echo "  Over 5 s of holding: ${R[g1_renewals]} renewals, ${R[g1_renew_lua]} µs of command time and" \
	    "${R[g1_renew_cpu]} µs of Redis CPU each. redlock's stderr: ${R[g1_err_lines]} lines${R[g1_err_top]:+ (${R[g1_err_top]})}."
	echo "  When they had finished, the largest PTTL left was ${R[g1_ttl_max]} ms and ${R[g1_no_ttl]} keys had no expiry;" \
	    "redlock's keys: ${R[g1_r1]} → ${R[g1_r2]}."
	nofile=$(ulimit -Hn) pidmax=$(cat /proc/sys/kernel/pid_max)
	per_task=$(calc "\"%.0f\", ($pidmax - $TASKS0) / (${R[g1_tasks]} / $N)")
	per_mem=$(calc "\"%.0f\", $MEM0 / (${R[g1_mem_kb]} / $N)")
	echo "- What limits N here: pid_max $pidmax (about $per_task holders at $(calc "\"%.1f\", ${R[g1_tasks]} / $N")" \
	    "tasks each), the server's descriptors (hard \`ulimit -n\` $nofile: maxclients ≤ $((nofile - 32))), memory" \
	    "($((MEM0 / 1024)) MiB available: about $per_mem holders), and the fork rate of $(nproc) cores" \
	    "($(calc "\"%.0f\", $N / ${R[g1_spawn_s]}") holders started a second)."
	echo "- G3: server CPU = schedstat run time of all the server's threads, less its idle rate" \
	    "($(calc "\"%.0f\", $IDLE / 1000") µs/s) over the $((R[g3_s])) s; by utime+stime (1/$TCK s ticks):" \
	    "${R[g3_rl_t]} µs vs ${R[g3_ping_t]} µs (${r_cpu_t}×)."
	[ -n "${R[g3_floor]:-}" ] &&
	    echo "  lockfloor (bench/tools/lockfloor.c, a hiredis process: \`SET NX PX\`, then a check-and-delete \`EVALSHA\`):" \
		"${R[g3_floor]} µs ($(calc "\"%.2f\", ${R[g3_floor]} / ${R[g3_ping]}")× PING) without a command," \
		"${R[g3_floorcmd]} µs ($(calc "\"%.2f\", ${R[g3_floorcmd]} / ${R[g3_ping]}")× PING) when it runs \`true\` in between:" \
		"on this machine the processes a lock starts cost the server CPU too (caches, scheduling)."
	echo "- G3 commands per \`redlock NAME true\` (calls, µs per run; the scripts' commands are inside evalsha's µs):" \
	    "$(awk '{ printf "%s%s %s× %sµs", (NR > 1 ? ", " : ""), $1, $2, $3 }' "$TMP/g3.cmds")."
	[ -s "$TMP/g4.py" ] &&
	    echo "- G4 redis-py Lock per acquire+release: $(awk '{ printf "%s%s %s× %sµs", (NR > 1 ? ", " : ""), $1, $2, $3 }' "$TMP/g4.py")."
	echo "- G5: $RENEWERS holders with \`-t 300ms\` renewing every 100 ms, a 5 s window in which nothing else ran" \
	    "on a fresh server (holders: ${R[g5_status]}); beside them, on another fresh server, $RENEWERS lockfloor holders" \
	    "extending every 100 ms: ${R[g5_fn]:-0} extensions."
}

# ---------------------------------------------------------------------------

[ -x "$REDLOCK" ] || die "no $REDLOCK: run make first"
for c in redis-server redis-cli; do
	command -v "$c" >/dev/null 2>&1 || die "missing $c"
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/redlock-fleet.XXXXXX") || die "mktemp failed"
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" -gt $((N + 100)) ] || die "ulimit -n $(ulimit -n) is too small for $N holders"
TCK=$(getconf CLK_TCK)
TASKS0=$(tasks)
MEM0=$(mem_available)

FLOOR=
build_floor
start_redis IDLE_SRV
IDLE=$(idle_rate "$IDLE_SRV_PID")
stop_pids "$IDLE_SRV_PID"
log "idle server: $IDLE ns/s"

bench_g1
bench_g3
bench_g4
bench_g5
bench_g2
section
