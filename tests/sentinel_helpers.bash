# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Helpers for sentinel.bats, on top of helpers.bash (load that first):
# a Sentinel setup of this file's own, every process on a free loopback
# port and stopped by pid (common_teardown_file stops whatever is left).
#
#   sentinel_setup G SERVICE   master G-m, replica G-r, sentinels G-s1..3
#                              watching SERVICE (quorum 2); sets
#                              SENTINEL_URL=redis+sentinel://.../SERVICE
#   sentinel_teardown G        stops them
#
# The replica replicates as the ACL user "repl", so that a test can cut
# replication without touching the replica (pause_replication G: the
# user is switched off and its link killed; the replica keeps its data
# and stays promotable) and restore it (resume_replication G).
#
# Sentinels are fast here: down-after-milliseconds 1000 (a dead master
# is noticed within a second or two) and failover-timeout 4000.

SENTINEL_DOWN_AFTER_MS=1000
SENTINEL_FAILOVER_TIMEOUT_MS=4000

# scli PORT ARGS...: redis-cli on a sentinel (TCP only: that is how
# clients reach sentinels).
scli() {
	local port=$1
	shift
	env -u REDISCLI_AUTH redis-cli -h 127.0.0.1 -p "$port" "$@"
}

sentinel_port() { redis_port "$1"; }

# start_sentinel NAME SERVICE MASTER_PORT QUORUM [config line...]
# A redis-server --sentinel with its own config file (Sentinel rewrites
# it) in $BATS_FILE_TMPDIR, on a free port; waits until it answers.
start_sentinel() {
	local name=$1 service=$2 mport=$3 quorum=$4
	shift 4
	local dir attempt port conf line
	dir=$(_redis_dir "$name")
	mkdir -p "$dir"
	rm -f "$dir/pid" "$dir/started.pid" "$dir/port"
	for ((attempt = 0; attempt < 5; attempt++)); do
		port=$(free_port)
		conf=$dir/sentinel.conf
		{
			echo "port $port"
			echo "bind 127.0.0.1"
			echo "daemonize yes"
			echo "pidfile $dir/pid"
			echo "logfile $dir/log"
			echo "dir $dir"
			echo "sentinel monitor $service 127.0.0.1 $mport $quorum"
			echo "sentinel down-after-milliseconds $service $SENTINEL_DOWN_AFTER_MS"
			echo "sentinel failover-timeout $service $SENTINEL_FAILOVER_TIMEOUT_MS"
			echo "sentinel parallel-syncs $service 1"
			for line in "$@"; do echo "$line"; done
		} >"$conf"
		redis-server "$conf" --sentinel </dev/null >/dev/null 2>&1 3>&-
		if wait_until -t 10 _sentinel_answers "$port"; then
			cp "$dir/pid" "$dir/started.pid"
			echo "$port" >"$dir/port"
			return 0
		fi
		[[ -f $dir/pid ]] && _kill_pid_wait "$(cat "$dir/pid")"
	done
	echo "start_sentinel: $name did not start; log:" >&2
	cat "$dir/log" >&2 2>/dev/null
	return 1
}

_sentinel_answers() {
	local reply
	reply=$(scli "$1" PING 2>&1)
	# A sentinel with requirepass answers NOAUTH: it is up.
	[[ $reply == PONG || $reply == *NOAUTH* ]]
}

# sentinel_master_port SENTINEL SERVICE: the master's port as that
# sentinel sees it (empty if it knows none).
sentinel_master_port() {
	scli "$(sentinel_port "$1")" SENTINEL get-master-addr-by-name "$2" 2>/dev/null |
		sed -n 2p
}

# sentinels_say G SERVICE PORT: all three sentinels of G name PORT.
sentinels_say() {
	local s
	for s in s1 s2 s3; do
		[[ $(sentinel_master_port "$1-$s" "$2") == "$3" ]] || return 1
	done
}

# _sentinel_ready G SERVICE: every sentinel knows the two others and
# the replica, so that a failover can be voted and has a candidate.
_sentinel_ready() {
	local s port
	for s in s1 s2 s3; do
		port=$(sentinel_port "$1-$s")
		[[ $(scli "$port" SENTINEL sentinels "$2" | grep -c '^runid$') == 2 ]] ||
			return 1
		[[ $(scli "$port" SENTINEL replicas "$2" | grep -c '^runid$') -ge 1 ]] ||
			return 1
	done
}

# role_of NAME: master or slave, as the server itself says (ROLE).
role_of() { rcli_at "$1" ROLE 2>/dev/null | head -n 1; }
is_master() { [[ $(role_of "$1") == master ]]; }

# replica_link NAME: up or down (INFO replication master_link_status).
replica_link() { redis_info_field replication master_link_status "$1"; }
link_is() { [[ $(replica_link "$1") == "$2" ]]; }

# caught_up G: the replica has applied everything the master wrote.
caught_up() {
	local m r
	m=$(redis_info_field replication master_repl_offset "$1-m")
	r=$(redis_info_field replication slave_repl_offset "$1-r")
	[[ -n $m && $m == "$r" ]]
}

# sentinel_setup G SERVICE [master option...]
sentinel_setup() {
	local g=$1 service=$2
	shift 2
	_start_pair "$g" "$@" || return 1
	wait_until -t 10 link_is "$g-r" up || return 1
	_start_sentinels "$g" "$service"
}

# sentinel_setup_unsynced G SERVICE: as sentinel_setup, but the replica's
# first sync never happens: the master waits 600 s
# (repl-diskless-sync-delay) before it sends its data, so the replica
# holds nothing of the master's, not even the guard's record, and yet is
# a replica that Sentinel can promote.
sentinel_setup_unsynced() {
	local g=$1 service=$2
	_start_pair "$g" --repl-diskless-sync yes \
		--repl-diskless-sync-delay 600 || return 1
	wait_until -t 10 _sync_pending "$g-m" || return 1
	_start_sentinels "$g" "$service"
}

# _sync_pending NAME: server NAME has a replica waiting for its first
# sync.
_sync_pending() {
	rcli_at "$1" INFO replication | grep -q '^slave0:.*state=wait_bgsave'
}

# rejoin_unsynced G: after fail_over or promoted, start G-m again on its
# old port as G-r's replica, empty as after a crash without persistence
# (as an operator restarts it; the sentinels would make it one too, but
# only after it has said it is a master for 8 s).  Returns once G-r has
# it waiting for its first sync (G-r delays that as G-m did): by then
# G-r has started its replication history afresh (a new master_replid,
# master_replid2 all zeros).
rejoin_unsynced() {
	local g=$1 port
	port=$(redis_port "$g-m")
	start_redis "$g-m" --port "$port" --user repl on '>replpw' '~*' '&*' \
		'+@all' --repl-diskless-sync yes --repl-diskless-sync-delay 600 \
		--replicaof 127.0.0.1 "$(redis_port "$g-r")" \
		--masteruser repl --masterauth replpw || return 1
	echo "$port" >"$(_redis_dir "$g-m")/port"
	wait_until -t 10 _sync_pending "$g-r" || {
		echo "rejoin_unsynced: $g-m did not become $g-r's replica" >&2
		return 1
	}
}

# _start_pair G [option...]: master G-m and its replica G-r, both on
# TCP, both with the user "repl" (a replica of either replicates as it)
# and the options.
_start_pair() {
	local g=$1
	shift
	start_redis "$g-m" --tcp --user repl on '>replpw' '~*' '&*' '+@all' \
		"$@" || return 1
	start_redis "$g-r" --tcp --replicaof 127.0.0.1 "$(redis_port "$g-m")" \
		--masteruser repl --masterauth replpw \
		--user repl on '>replpw' '~*' '&*' '+@all' "$@"
}

# _start_sentinels G SERVICE: G-s1..3 watching G-m; sets SENTINEL_URL.
_start_sentinels() {
	local g=$1 service=$2 mport s
	mport=$(redis_port "$g-m")
	for s in s1 s2 s3; do
		start_sentinel "$g-$s" "$service" "$mport" 2 || return 1
	done
	wait_until -t 20 _sentinel_ready "$g" "$service" || {
		echo "sentinel_setup: the sentinels did not find each other" >&2
		return 1
	}
	SENTINEL_URL="redis+sentinel://127.0.0.1:$(sentinel_port "$g-s1"),127.0.0.1:$(sentinel_port "$g-s2"),127.0.0.1:$(sentinel_port "$g-s3")/$service"
}

# sentinel_teardown G: stop every process of G this file started.
sentinel_teardown() {
	local n
	for n in m r s1 s2 s3; do
		stop_redis "$1-$n"
	done
}

# pause_replication G / resume_replication G (see the top).
pause_replication() {
	rcli_at "$1-m" ACL SETUSER repl off >/dev/null &&
		rcli_at "$1-m" CLIENT KILL USER repl >/dev/null &&
		wait_until -t 10 link_is "$1-r" down
}
resume_replication() {
	rcli_at "$1-m" ACL SETUSER repl on >/dev/null &&
		wait_until -t 15 link_is "$1-r" up
}

# a_sentinel_says G SERVICE PORT: at least one sentinel of G names PORT.
a_sentinel_says() {
	local s
	for s in s1 s2 s3; do
		[[ $(sentinel_master_port "$1-$s" "$2") == "$3" ]] && return 0
	done
	return 1
}

# promoted G SERVICE: wait (bounded) until the replica says it is the
# master and a sentinel names it: a client can find it from then on.
promoted() {
	wait_until -t 30 is_master "$1-r" &&
		wait_until -t 20 a_sentinel_says "$1" "$2" "$(redis_port "$1-r")"
}

# fail_over G SERVICE: SIGKILL the master and wait (bounded) until the
# replica says it is the master and every sentinel names it.
fail_over() {
	local rport
	rport=$(redis_port "$1-r")
	kill_redis "$1-m" || return 1
	wait_until -t 30 is_master "$1-r" || {
		echo "fail_over: $1-r was not promoted" >&2
		return 1
	}
	wait_until -t 20 sentinels_say "$1" "$2" "$rport" || {
		echo "fail_over: the sentinels do not all name $1-r" >&2
		return 1
	}
}

# record NAME FIELD: a field of the failover guard's record (prefix
# "redlock:") on server NAME; the key holds a NUL byte, so Lua builds it.
record() {
	rcli_at "$1" EVAL "return redis.call('HGET', 'redlock:' .. string.char(0) .. 'failover', ARGV[1])" 0 "$2"
}
no_record() {
	[[ $(rcli_at "$1" EVAL "return redis.call('EXISTS', 'redlock:' .. string.char(0) .. 'failover')" 0) == 0 ]]
}

# pttl_on NAME KEY
pttl_on() { rcli_at "$1" PTTL "$2"; }
pttl_above() { (($(pttl_on "$1" "$2") > $3)); }

# assert_failed_over_handover KILL_MS: after the master died at KILL_MS
# (ms) while guarded job h held NAME with a 12 s lease, h exits 75 and is
# gone by the end of that lease, and the waiter w gets NAME only after h
# is gone, with a greater fence (fault_helpers.bash: start_guarded).
assert_failed_over_handover() {
	local kill_ms=$1 d=$BATS_TEST_TMPDIR
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	assert_gone_by h $((kill_ms + 12000)) "the end of the lease granted before the failover"
	assert_gets_lock w 40
	(($(start_ms w) >= $(freed_ms h))) ||
		fail "the waiter started at $(start_ms w), before the holder was gone at $(freed_ms h)"
	(($(cat "$d/w.fence") > $(cat "$d/h.fence"))) ||
		fail "fence $(cat "$d/w.fence") after $(cat "$d/h.fence")"
}
