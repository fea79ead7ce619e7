# shellcheck shell=bash
# bench/lib.sh - what the benchmark scripts share (sourced by run.sh,
# fleet.sh, record.sh and server-cpu.sh): stopping our own processes by
# pid, redis-servers of our own on free loopback ports, and the
# lockfloor comparator.  The caller defines BENCH (this directory), die,
# TMP (a directory for the servers' files) and the array SERVERS (every
# server started is added to it, for the caller's cleanup to stop).

# build_lockfloor OUT: bench/tools/lockfloor.c built into OUT, hiredis
# linked as redlock links it (statically when the archive is there);
# fails, quietly, when it cannot be built.
build_lockfloor() {
	local cflags
	cflags=$(pkg-config --cflags hiredis 2>/dev/null)
	# shellcheck disable=SC2086,SC2046 # pkg-config's words
	cc -O2 -std=c11 -D_GNU_SOURCE $cflags -o "$1" "$BENCH/tools/lockfloor.c" \
	    -Wl,-Bstatic -lhiredis -Wl,-Bdynamic 2>/dev/null ||
	    cc -O2 -std=c11 -D_GNU_SOURCE $cflags -o "$1" "$BENCH/tools/lockfloor.c" \
	    $(pkg-config --libs hiredis 2>/dev/null) 2>/dev/null
}

any_alive() {
	local p st
	for p in "$@"; do
		st=
		{ read -r st <"/proc/$p/stat"; } 2>/dev/null || continue
		st=${st##*) }
		[ "${st%% *}" = Z ] || return 0
	done
	return 1
}

stop_pids() {
	local i
	[ "$#" -eq 0 ] && return 0
	kill -TERM "$@" 2>/dev/null
	for ((i = 0; i < 60; i++)); do
		any_alive "$@" || break
		sleep 0.05
	done
	kill -KILL "$@" 2>/dev/null
	wait "$@" 2>/dev/null
	return 0
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 12000))
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	return 1
}

# start_redis VAR [redis option...]: a server of our own on a free
# port; VAR_PORT and VAR_PID are set.
start_redis() {
	local var=$1 try i p pid got
	shift
	for ((try = 0; try < 10; try++)); do
		p=$(pick_port) || break
		redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no \
		    --dir "$TMP" --logfile "$TMP/redis-$p.log" --daemonize no "$@" \
		    </dev/null >/dev/null 2>&1 &
		pid=$!
		SERVERS+=("$pid")
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			got=$(info "$p" server process_id 2>/dev/null)
			if [ "$got" = "$pid" ]; then
				printf -v "${var}_PORT" %s "$p"
				printf -v "${var}_PID" %s "$pid"
				return 0
			fi
			[ -n "$got" ] && break	# someone else's server
			sleep 0.05
		done
		stop_pids "$pid"
	done
	die "cannot start redis-server (see $TMP/redis-*.log)"
}

rcli() { local p=$1; shift; redis-cli -h 127.0.0.1 -p "$p" "$@"; }

# info PORT SECTION FIELD
info() {
	rcli "$1" INFO "$2" | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2 }'
}

now_us() { local t=$EPOCHREALTIME; echo $((10#${t//[.,]/})); }

# Server CPU, for the rows that count it (record.sh, server-cpu.sh);
# per_run divides by the caller's RUNS.
# cpu PID: the schedstat run time (ns) of all the process's threads.
cpu() {
	local f ns=0 a
	for f in /proc/"$1"/task/*/schedstat; do
		read -r a _ <"$f" && ns=$((ns + a))
	done
	echo "$ns"
}

# idle PID: the idle server's CPU in ns per second, over 2 s.
idle() {
	local a b t0 t1
	a=$(cpu "$1") t0=$(now_us)
	sleep 2
	b=$(cpu "$1") t1=$(now_us)
	awk -v d=$((b - a)) -v t=$((t1 - t0)) 'BEGIN { printf "%.0f", d * 1e6 / t }'
}

# per_run A B IDLE US: µs of server CPU per run from cpu values A and B
# over US µs, less the idle rate.
per_run() {
	awk -v a="$1" -v b="$2" -v idle="$3" -v us="$4" -v n="$RUNS" \
	    'BEGIN { printf "%.1f", (b - a - idle * us / 1e6) / 1000 / n }'
}
