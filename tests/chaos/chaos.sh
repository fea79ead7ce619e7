#!/usr/bin/env bash
#
# chaos.sh - redlock under real faults, on one machine (`make chaos`).
#
# Usage: tests/chaos/chaos.sh [-s SEED] [-d SECONDS] [-k] [SCENARIO...]
#   -s SEED      the mixed scenario's seed (default: drawn, and printed)
#   -d SECONDS   how long the mixed scenario injects faults (default 60)
#   -k           keep the history directory (printed) instead of removing it
#   SCENARIO     any of the list below (default: all of them, in order)
# Environment: REDLOCK, the binary (default: ./redlock of the repository);
# TMPDIR, where the history directory goes (default /tmp).
#
# Needs root (network namespaces, iptables), redis-server, redis-cli,
# iptables and /usr/bin/python3; the clock scenario needs libfaketime.
# Three simulated hosts h1..h3 are network namespaces; the Redis side is a
# fourth, which holds every redis-server and sentinel on 10.231.0.1 (an
# address on its loopback).  Host i is joined to it by a veth pair,
# 10.231.i.2 <-> 10.231.i.1, and routes 10.231.0.0/24 through it; nothing
# is routed anywhere else, so no packet leaves the namespaces, and the
# machine's own interfaces and ports are untouched (the harness refuses
# to start if 10.231.0.0/16 is in use here).  On each host a loop runs
# the real redlock with tests/chaos/workload.py as its command: each
# critical section writes to a fenced store (a file under flock, which
# the namespaces share) and its times on CLOCK_MONOTONIC, which every
# namespace shares.  A nemesis injects one kind of fault per scenario;
# tests/chaos/check.py then judges the history (see there) and prints a
# row of the table.  Ends with "N passed, N failed"; exits 1 if a
# scenario failed, 77 if it cannot run here (not root, no netns).
#
# Everything is created under names of this run (namespaces rlcPID*, a
# directory from mktemp) and removed on exit, also on failure or
# interrupt: the processes in this run's namespaces (all started here)
# are killed by pid, the namespaces deleted, the directory removed.

set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
REDLOCK=${REDLOCK:-$repo/redlock}
case $REDLOCK in /*) ;; *) REDLOCK=$PWD/$REDLOCK ;; esac
PY=/usr/bin/python3
WORKLOAD=$here/workload.py
CHECK=$here/check.py
PROXY=$repo/tests/proxy.py

# Short leases keep each scenario to a few tens of seconds: a fault only
# tells something when it outlasts a lease, and the man page's bounds
# (renewal every third of the TTL, --kill-after a tenth) scale with it.
TTL_MS=2000
# The longest wait of a host for the lock: long enough to outlast any
# fault here (so that waiters are there to take over at once), short
# enough that a loop ends soon after it is told to.
WAIT=20s
# A section holds the lock 3 s, longer than a TTL: a fault that hits a
# holder always hits it inside its section, across a renewal.
HOLD_MS=3000
# The overlap redlock-protocol(7) admits after a server forgot its keys:
# the old holder's next renewal (a third of the TTL), its --kill-after
# (a tenth), and 0.6 s for the processes of a loaded 2-core machine to
# run.
FORGET_MS=$((TTL_MS / 3 + TTL_MS / 10 + 600))
HOSTS=(h1 h2 h3)
SRV_IP=10.231.0.1
SERVICE=chaossvc
ALL=(partition slow-link pause-holder pause-server forget-single
	forget-quorum failover failover-unsynced clock mixed)

seed=
mixed_s=60
keep=0
while getopts 's:d:k' o; do
	case $o in
	s) seed=$OPTARG ;;
	d) mixed_s=$OPTARG ;;
	k) keep=1 ;;
	*) sed -n '5,10p' "$0" >&2; exit 64 ;;
	esac
done
shift $((OPTIND - 1))
scenarios=("$@")
((${#scenarios[@]})) || scenarios=("${ALL[@]}")
for s in "${scenarios[@]}"; do
	[[ " ${ALL[*]} " == *" $s "* ]] || { echo "chaos: unknown scenario '$s' (${ALL[*]})" >&2; exit 64; }
done
[[ -n $seed ]] || seed=$((RANDOM * 32768 + RANDOM))
[[ $seed =~ ^[0-9]+$ && $mixed_s =~ ^[0-9]+$ ]] || { echo "chaos: -s and -d take numbers" >&2; exit 64; }

# --- can it run here ------------------------------------------------------

skip() { echo "chaos: skipped: $*"; exit 77; }
(($(id -u) == 0)) || skip "needs root (network namespaces, iptables)"
for c in ip iptables redis-server redis-cli; do
	command -v "$c" >/dev/null || skip "$c not found"
done
[[ -x $PY ]] || skip "$PY not found"
[[ -x $REDLOCK ]] || { echo "chaos: $REDLOCK is not an executable (run make)" >&2; exit 70; }
if ip -4 addr show 2>/dev/null | grep -q ' 10\.231\.' ||
	ip -4 route show 2>/dev/null | grep -q '^10\.231\.'; then
	skip "10.231.0.0/16 is in use on this machine"
fi
FAKETIME_LIB=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
	[[ -e $f ]] && FAKETIME_LIB=$f && break
done

# Every namespace of this run is named after it: rlcPID (a caller that
# checks what is left may choose it, REDLOCK_CHAOS_NAME, letters and
# digits, at most 12 so that interface names fit in 15 bytes).
NSP=${REDLOCK_CHAOS_NAME:-rlc$$}
[[ $NSP =~ ^[a-z][a-z0-9]{0,11}$ ]] || { echo "chaos: bad REDLOCK_CHAOS_NAME '$NSP'" >&2; exit 64; }
SRV=${NSP}s
RUN=$(mktemp -d "${TMPDIR:-/tmp}/redlock-chaos.XXXXXX") || exit 70
ip netns add "${NSP}probe" 2>/dev/null || { rm -rf "$RUN"; skip "cannot create a network namespace"; }
ip netns del "${NSP}probe"

# --- cleanup ------------------------------------------------------------------

# our_namespaces: this run's namespaces that exist.
our_namespaces() { ip netns list 2>/dev/null | awk -v p="$NSP" 'index($1, p) == 1 { print $1 }'; }

# kill_ns NS: SIGKILL every process in NS (all of them started here).
kill_ns() {
	local pid i
	for ((i = 0; i < 50; i++)); do
		local -a pids=()
		mapfile -t pids < <(ip netns pids "$1" 2>/dev/null)
		((${#pids[@]})) || return 0
		for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
		sleep 0.1
	done
}

cleanup() {
	local ns
	for ns in $(our_namespaces); do
		kill_ns "$ns"
		ip netns del "$ns" 2>/dev/null
	done
	if ((keep)); then
		echo "# history kept in $RUN"
	else
		rm -rf "$RUN"
	fi
}
trap cleanup EXIT
trap 'echo "# interrupted" >&2; exit 130' INT TERM

# --- small tools -------------------------------------------------------------

# await SECONDS CMD...: polls CMD every 50 ms until it succeeds; fails
# after SECONDS.
await() {
	local n=$(($1 * 20))
	shift
	while ((n-- > 0)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# stamp FILE WORD...: a line "T WORD..." on the shared monotonic clock.
stamp() { "$PY" "$WORKLOAD" stamp "$@"; }
# ev KIND TARGET start|end: a fault event in the scenario's history.
ev() { stamp "$D/events.log" "$@"; echo "#   $(date +%T) $*" >&2; }

in_srv() { ip netns exec "$SRV" "$@"; }
rcli() { local p=$1; shift; in_srv redis-cli -h "$SRV_IP" -p "$p" "$@"; }

# --- the network --------------------------------------------------------------

# net_up: the Redis side and the three hosts, joined by veth pairs.
net_up() {
	local i h
	ip netns add "$SRV" || return 1
	ip -n "$SRV" link set lo up
	ip -n "$SRV" addr add "$SRV_IP/32" dev lo
	for i in 1 2 3; do
		h=${NSP}h$i
		ip netns add "$h" || return 1
		ip -n "$h" link set lo up
		ip link add name "${NSP}a$i" netns "$SRV" type veth \
			peer name "${NSP}b$i" netns "$h" || return 1
		ip -n "$SRV" addr add "10.231.$i.1/24" dev "${NSP}a$i"
		ip -n "$SRV" link set "${NSP}a$i" up
		ip -n "$h" addr add "10.231.$i.2/24" dev "${NSP}b$i"
		ip -n "$h" link set "${NSP}b$i" up
		ip -n "$h" route add 10.231.0.0/24 via "10.231.$i.1"
	done
}

# on HOST CMD...: CMD in host HOST's namespace.
on() { local h=$1; shift; ip netns exec "${NSP}$h" "$@"; }

# sever HOST / heal HOST: drop every packet between HOST and the servers
# (both ways, so that connections hang as across a real partition rather
# than being refused).
sever() {
	on "$1" iptables -w -I OUTPUT -d "$SRV_IP" -j DROP &&
		on "$1" iptables -w -I INPUT -s "$SRV_IP" -j DROP
}
heal() {
	on "$1" iptables -w -D OUTPUT -d "$SRV_IP" -j DROP
	on "$1" iptables -w -D INPUT -s "$SRV_IP" -j DROP
}
# lossy HOST P / unlossy HOST P: drop each packet with probability P.
lossy() {
	local r=(-m statistic --mode random --probability "$2" -j DROP)
	on "$1" iptables -w -I OUTPUT -d "$SRV_IP" "${r[@]}" &&
		on "$1" iptables -w -I INPUT -s "$SRV_IP" "${r[@]}"
}
unlossy() {
	local r=(-m statistic --mode random --probability "$2" -j DROP)
	on "$1" iptables -w -D OUTPUT -d "$SRV_IP" "${r[@]}"
	on "$1" iptables -w -D INPUT -s "$SRV_IP" "${r[@]}"
}

# --- servers --------------------------------------------------------------------

declare -A SRV_ARGS=()

# redis_start PORT [ARG...]: a redis-server without persistence in the
# Redis namespace, on SRV_IP:PORT; waits until it answers.
redis_start() {
	local p=$1
	shift
	SRV_ARGS[$p]="$*"
	mkdir -p "$RUN/srv/$p"
	in_srv redis-server --port "$p" --bind 0.0.0.0 --protected-mode no \
		--save '' --appendonly no --daemonize yes \
		--pidfile "$RUN/srv/$p/pid" --dir "$RUN/srv/$p" \
		--logfile "$RUN/srv/$p/log" "$@" </dev/null >/dev/null 2>&1
	await 10 redis_up "$p" || { echo "chaos: redis-server on $p did not start" >&2; return 1; }
}
redis_up() { [[ $(rcli "$1" PING 2>/dev/null) == PONG ]]; }
redis_pid() { cat "$RUN/srv/$1/pid" 2>/dev/null; }

# redis_kill PORT: SIGKILL, and wait until it is gone.
redis_kill() {
	local pid
	pid=$(redis_pid "$1") || return 0
	kill -KILL "$pid" 2>/dev/null
	await 10 pid_gone "$pid"
	rm -f "$RUN/srv/$1/pid"
}
# pid_gone PID: no such process, or a zombie (a daemon's zombie lingers
# until whoever adopted it reaps it).
pid_gone() {
	local stat
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
	stat=${stat##*) }
	[[ ${stat%% *} == Z ]]
}

# redis_restart PORT: killed and started again empty, as after a crash
# of a server without persistence.
redis_restart() {
	redis_kill "$1"
	# shellcheck disable=SC2086 # the arguments were words
	redis_start "$1" ${SRV_ARGS[$1]}
}

# sentinels_start MASTER_PORT: three sentinels (7101-7103) watching
# SERVICE at SRV_IP:MASTER_PORT, quick to fail over (down after 1 s).
sentinels_start() {
	local p conf
	for p in 7101 7102 7103; do
		mkdir -p "$RUN/srv/$p"
		conf=$RUN/srv/$p/sentinel.conf
		printf '%s\n' "port $p" "bind 0.0.0.0" "protected-mode no" "daemonize yes" \
			"pidfile $RUN/srv/$p/pid" "logfile $RUN/srv/$p/log" "dir $RUN/srv/$p" \
			"sentinel monitor $SERVICE $SRV_IP $1 2" \
			"sentinel down-after-milliseconds $SERVICE 1000" \
			"sentinel failover-timeout $SERVICE 4000" >"$conf"
		in_srv redis-server "$conf" --sentinel </dev/null >/dev/null 2>&1
		await 10 redis_up "$p" || return 1
	done
	await 30 sentinels_ready || { echo "chaos: the sentinels did not find each other" >&2; return 1; }
}
sentinels_ready() {
	local p
	for p in 7101 7102 7103; do
		[[ $(rcli "$p" SENTINEL sentinels "$SERVICE" | grep -c '^runid$') == 2 ]] || return 1
		[[ $(rcli "$p" SENTINEL replicas "$SERVICE" | grep -c '^runid$') -ge 1 ]] || return 1
	done
}
sentinel_names() { [[ $(rcli "$1" SENTINEL get-master-addr-by-name "$SERVICE" | sed -n 2p) == "$2" ]]; }
promoted() {
	[[ $(rcli "$1" ROLE 2>/dev/null | head -n 1) == master ]] &&
		{ sentinel_names 7101 "$1" || sentinel_names 7102 "$1" || sentinel_names 7103 "$1"; }
}

linked() { rcli "$1" INFO replication | grep -q '^master_link_status:up'; }

servers_stop() {
	local d
	for d in "$RUN"/srv/*/; do
		[[ -d $d ]] && redis_kill "$(basename "$d")"
	done
	rm -rf "$RUN/srv"
	SRV_ARGS=()
}

# --- hosts ----------------------------------------------------------------------

# The loop of one host: redlock with the workload as its command, until
# the file stop appears (at most 1000 runs), each run's exit status
# stamped in runs.log.  The stamps and the workload run outside
# libfaketime (env -u): they write true times whatever the host's clock.
# shellcheck disable=SC2016 # expanded by the loop's shell
HOST_LOOP='h=$1 d=$2 hold=$3 py=$4 wl=$5 rl=$6
shift 6
i=0
while [ ! -e "$d/stop" ] && [ $i -lt 1000 ]; do
	"$rl" "$@" chaos env -u LD_PRELOAD -u FAKETIME "$py" "$wl" section "$h" "$d" "$hold" 2>>"$d/err.$h"
	st=$?
	env -u LD_PRELOAD -u FAKETIME "$py" "$wl" stamp "$d/runs.log" run-end "$h" "$st"
	sleep 0.05
	i=$((i + 1))
done'

# host_start HOST [env NAME=VALUE...] -- REDLOCK-OPTION...: the loop of
# HOST in its namespace, with the environment given (libfaketime).
host_start() {
	local h=$1
	shift
	local -a envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	ip netns exec "${NSP}$h" env "${envs[@]}" /bin/sh -c "$HOST_LOOP" loop \
		"$h" "$D" "$HOLD_MS" "$PY" "$WORKLOAD" "$REDLOCK" \
		-t "${TTL_MS}ms" -w "$WAIT" "$@" </dev/null >/dev/null 2>&1 &
	echo $! >>"$D/loops"
}

# hosts_stop: tell the loops to stop, wait for them (a run ends within a
# section and a wait), then kill what is left in the hosts' namespaces.
hosts_stop() {
	local pid h
	: >"$D/stop"
	while read -r pid; do
		await 45 pid_gone "$pid" || echo "# a host loop did not stop; killed" >&2
	done <"$D/loops"
	for h in "${HOSTS[@]}"; do kill_ns "${NSP}$h"; done
	wait 2>/dev/null
	rm -f "$D/loops"
}

# holder: the host in a critical section now (empty if none).
holder() { local f; for f in "$D"/in.*; do [[ -e $f ]] && echo "${f##*/in.}" && return 0; done; return 1; }
has_holder() { holder >/dev/null; }
is_holder() { [[ -e $D/in.$1 ]]; }

# wait_holder [HOST]: wait (30 s at most) for a holder (HOST), print it.
wait_holder() {
	if [[ -n ${1:-} ]]; then
		await 30 is_holder "$1" && echo "$1"
	else
		await 30 has_holder && holder
	fi
}

# grants: how many sections began so far; granted_since N: more than N.
grants() { grep -c ' begin ' "$D/store.log" 2>/dev/null; }
granted_since() { (($(grants) > $1)); }

# tree PID: PID and its descendants.
tree() {
	local c
	echo "$1"
	# shellcheck disable=SC2013 # the file is one line of words
	for c in $(cat "/proc/$1/task/"*/children 2>/dev/null); do tree "$c"; done
}
# holder_redlock HOST: the pid of the redlock that runs HOST's section.
holder_redlock() {
	local pid
	read -r _ pid <"$D/in.$1" 2>/dev/null || return 1
	awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null
}

# --- scenarios --------------------------------------------------------------------

# Each scenario: servers, hosts, the nemesis, then hosts_stop and
# servers_stop; it prints the checker's extra arguments on stdout.

single() { redis_start 7001; URLS=(-u "redis://$SRV_IP:7001"); }
quorum() {
	redis_start 7001 && redis_start 7002 && redis_start 7003
	URLS=(-u "redis://$SRV_IP:7001" -u "redis://$SRV_IP:7002" -u "redis://$SRV_IP:7003")
}
all_hosts() { local h; for h in "${HOSTS[@]}"; do host_start "$h" -- "${URLS[@]}"; done; }

sc_partition() {
	local r h
	single && all_hosts
	for r in 1 2; do
		h=$(wait_holder) || return 1
		ev partition "$h" start
		sever "$h"
		sleep $((2 * TTL_MS / 1000 + 1)) # the fault: two leases and more
		heal "$h"
		ev partition "$h" end
		sleep 2
	done
}

sc_slow_link() {
	local h p
	redis_start 7001
	for h in "${HOSTS[@]}"; do
		echo "0 pass" >"$D/proxy.$h.ctl"
		on "$h" "$PY" "$PROXY" "$SRV_IP:7001" "$D/proxy.$h.port" "$D/proxy.$h.ctl" \
			"$D/proxy.$h.status" </dev/null >/dev/null 2>&1 &
		await 10 test -s "$D/proxy.$h.port" || return 1
		p=$(cat "$D/proxy.$h.port")
		host_start "$h" -- -u "redis://127.0.0.1:$p"
	done
	sleep 3
	# Every reply 250 ms late, and 15% of the packets lost both ways on
	# h1 and h2 (TCP retransmits it after 200 ms or more): renewals are
	# late, some fail, a few leases are lost.
	for h in "${HOSTS[@]}"; do echo "1 delay 250" >"$D/proxy.$h.ctl.new" && mv "$D/proxy.$h.ctl.new" "$D/proxy.$h.ctl"; done
	ev slow all start
	lossy h1 0.15 && lossy h2 0.15
	sleep 15
	unlossy h1 0.15
	unlossy h2 0.15
	for h in "${HOSTS[@]}"; do echo "2 pass" >"$D/proxy.$h.ctl.new" && mv "$D/proxy.$h.ctl.new" "$D/proxy.$h.ctl"; done
	ev slow all end
	sleep 3
}

# pause HOST SECONDS: SIGSTOP HOST's holding redlock and its command
# together, as a frozen machine, for SECONDS.
pause_holder() {
	local rl pids
	rl=$(holder_redlock "$1") || return 1
	pids=$(tree "$rl")
	ev pause "$1" start
	# shellcheck disable=SC2086 # pids are words
	kill -STOP $pids
	sleep "$2"
	# shellcheck disable=SC2086
	kill -CONT $pids
	ev pause "$1" end
}

sc_pause_holder() {
	local r h
	single && all_hosts
	for r in 1 2; do
		h=$(wait_holder) || return 1
		pause_holder "$h" $((2 * TTL_MS / 1000)) || return 1
		sleep 3
	done
	echo --admit paused
}

sc_pause_server() {
	local r pid
	single && all_hosts
	for r in 1 2; do
		wait_holder >/dev/null || return 1
		pid=$(redis_pid 7001)
		ev pause-server 7001 start
		kill -STOP "$pid"
		sleep $((2 * TTL_MS / 1000))
		kill -CONT "$pid"
		ev pause-server 7001 end
		sleep 3
	done
}

sc_forget_single() {
	local r
	single && all_hosts
	for r in 1 2; do
		wait_holder >/dev/null || return 1
		ev restart 7001 start
		redis_restart 7001 || return 1
		ev restart 7001 end
		sleep 4
	done
	echo --admit "forget=$FORGET_MS"
}

sc_forget_quorum() {
	local p
	quorum && all_hosts
	for p in 7001 7002; do
		wait_holder >/dev/null || return 1
		ev restart "$p" start
		redis_restart "$p" || return 1
		ev restart "$p" end
		# The next restart of another server comes after a TTL: the man
		# page's advice, and the quorum's premise (a majority keeps it).
		sleep 4
	done
}

# failover [ARG...]: master 7001 (with ARGs) and replica 7002 under three
# sentinels; the master is killed while a host holds the lock, and comes
# back empty once the replica is promoted (Sentinel makes it a replica).
# The lease is 15 s here: a failover and the return take 5-8 s (1 s to
# be seen down, an election, a restart and a sync), and only a lease
# that outlives them can overlap.
failover() {
	local h n
	TTL_MS=15000 HOLD_MS=17000
	redis_start 7001 "$@" || return 1
	redis_start 7002 --replicaof "$SRV_IP" 7001 || return 1
	sentinels_start 7001 || return 1
	URLS=(-u "redis+sentinel://$SRV_IP:7101,$SRV_IP:7102,$SRV_IP:7103/$SERVICE")
	all_hosts
	# A grant fresh from the old master: its lease has the longest to run.
	wait_holder >/dev/null || return 1
	n=$(grants)
	await $((HOLD_MS / 1000 + 10)) granted_since "$n" || return 1
	# The hosts are cut off from the Redis side while it fails over, so
	# that the first they see of the new master is after the old one came
	# back as its replica (which resets a never-synced master's
	# replication ids); the holder, which cannot renew, runs on its lease.
	ev failover 7001 start
	for h in "${HOSTS[@]}"; do sever "$h"; done
	redis_kill 7001
	await 30 promoted 7002 || { echo "chaos: 7002 was not promoted" >&2; return 1; }
	# As Sentinel would make it, only sooner: a replica of the new master.
	redis_start 7001 "$@" --replicaof "$SRV_IP" 7002 || return 1
	await 20 linked 7001 || { echo "chaos: 7001 did not come back as a replica" >&2; return 1; }
	for h in "${HOSTS[@]}"; do heal "$h"; done
	ev failover 7001 end
	sleep $((TTL_MS / 1000 + 4))
}
sc_failover() {
	failover
}
# The replica never finishes its first sync: the master waits an hour
# before it sends the data (diskless, with a delay), so the replica that
# Sentinel promotes has none of the locks.
sc_failover_unsynced() {
	failover --repl-diskless-sync yes --repl-diskless-sync-delay 3600 \
		--repl-diskless-sync-max-replicas 0
}

sc_clock() {
	local h
	[[ -n $FAKETIME_LIB ]] || { echo "chaos: libfaketime not found (apt-get install faketime)" >&2; return 1; }
	single
	# h1's clock runs at half speed, h2's at twice, h3's is right; the
	# library is preloaded into each loop's shell, whose processes share
	# its clock (FAKETIME_SHARED), as tests/once-per.bats does.
	host_start h1 LD_PRELOAD="$FAKETIME_LIB" FAKETIME="+0 x0.5" -- "${URLS[@]}"
	host_start h2 LD_PRELOAD="$FAKETIME_LIB" FAKETIME="+0 x2" -- "${URLS[@]}"
	host_start h3 -- "${URLS[@]}"
	for h in h1 h2; do
		wait_holder "$h" >/dev/null || return 1
		ev partition "$h" start
		sever "$h"
		sleep $((3 * TTL_MS / 1000 + 1))
		heal "$h"
		ev partition "$h" end
		sleep 2
	done
	echo --admit drift=h1
}

# The mixed run: faults drawn from the seed on a quorum of three, one at
# a time, for mixed_s seconds.
sc_mixed() {
	local end f h p t
	echo "# mixed: seed $seed (tests/chaos/chaos.sh -s $seed mixed)" >&2
	RANDOM=$seed
	quorum && all_hosts
	sleep 2
	end=$((SECONDS + mixed_s))
	while ((SECONDS < end)); do
		f=$((RANDOM % 5))
		p=$((7001 + RANDOM % 3))
		t=$((1 + RANDOM % (2 * TTL_MS / 1000 + 1)))
		h=$(holder) || h=${HOSTS[RANDOM % 3]}
		case $f in
		0) ev partition "$h" start; sever "$h"; sleep "$t"; heal "$h"; ev partition "$h" end ;;
		1) ev lossy "$h" start; lossy "$h" 0.2; sleep "$t"; unlossy "$h" 0.2; ev lossy "$h" end ;;
		2) is_holder "$h" && pause_holder "$h" "$t" ;;
		3) ev pause-server "$p" start; kill -STOP "$(redis_pid "$p")"; sleep "$t"
			kill -CONT "$(redis_pid "$p")"; ev pause-server "$p" end ;;
		4) # Restarted without its data, after the man page's delay of a TTL.
			ev restart "$p" start; redis_kill "$p"; sleep $((TTL_MS / 1000 + 1))
			# shellcheck disable=SC2086
			redis_start "$p" ${SRV_ARGS[$p]}; ev restart "$p" end ;;
		esac
		sleep $((1 + RANDOM % 3))
	done
	echo --admit paused
}

# --- main -------------------------------------------------------------------------

net_up || { echo "chaos: cannot set up the namespaces" >&2; exit 70; }
echo "# chaos: $REDLOCK, hosts ${HOSTS[*]}, TTL ${TTL_MS} ms, seed $seed"
rows=()
passed=0
failed=0
for s in "${scenarios[@]}"; do
	D=$RUN/$s
	mkdir -p "$D"
	echo "# --- $s"
	t0=$SECONDS
	args=$("sc_${s//-/_}") || { echo "# $s: the scenario could not run its faults" >&2; setup_failed=1; }
	hosts_stop
	servers_stop
	# shellcheck disable=SC2086 # the checker's words
	out=$("$PY" "$CHECK" "$D" "$s" $args)
	rc=$?
	if [[ -n ${setup_failed:-} ]]; then
		rc=1
		out=${out/$'\t'PASS/$'\t'FAIL (setup)}
	fi
	unset setup_failed
	grep -v '^row' <<<"$out"
	rows+=("$(grep '^row' <<<"$out" | cut -f2-)")
	echo "#   $s: $((SECONDS - t0)) s"
	if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	for h in "${HOSTS[@]}"; do
		[[ -s $D/err.$h ]] && sort "$D/err.$h" | uniq -c | sort -rn | head -3 | sed "s/^/#   $h: /"
	done
done
echo
{
	printf '%s\t' SCENARIO RUNS GRANTS OVERLAPS ADMITTED STALE-REJECTED STALE-ACCEPTED EXITS MAX-UNAVAILABLE-S RESULT
	echo
	printf '%s\n' "${rows[@]}"
} | column -t -s $'\t'
echo "$passed passed, $failed failed"
((failed == 0))
