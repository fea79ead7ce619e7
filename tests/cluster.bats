#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Redis Cluster (REDIS CLUSTER in redlock-protocol(7)): a URL may name any node; MOVED, ASK,
# TRYAGAIN and CLUSTERDOWN are dealt with in every operation; list scans
# every master; several nodes of one cluster are one deployment.
#
# The file builds its own cluster of three masters (c1, c2, c3) and a
# replica of c1 (r1) and of c2 (r2), each on a free port with a free
# cluster bus port.

load helpers
load cluster_helpers

NODES=(c1 c2 c3)

lifecycle
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	local n
	for n in "${NODES[@]}"; do
		start_cluster_node "$n" || return 1
	done
	cluster_create || return 1
	add_replica r1 c1 || return 1
	add_replica r2 c2 || return 1
	wait_until -t 30 cluster_ok "${NODES[@]}" r1 r2
}

# add_replica NODE MASTER: start NODE and join it as MASTER's replica.
add_replica() {
	start_cluster_node "$1" || return 1
	redis-cli --cluster add-node "127.0.0.1:$(redis_port "$1")" \
		"127.0.0.1:$(redis_port "$2")" \
		--cluster-slave --cluster-master-id "$(rcli_at "$2" CLUSTER MYID)" \
		>>"$BATS_FILE_TMPDIR/create.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/create.log" >&2; return 1; }
	wait_until -t 30 replica_up "$1"
}

test_setup() {
	unset REDLOCK_PREFIX REDLOCK_PASSWORD REDISCLI_AUTH REDLOCK_HELD REDLOCK_URL
	local n reply
	for n in "${NODES[@]}" r1 r2; do
		# Not a node stopped for good, nor a replica (read-only).
		[[ -f $(_redis_dir "$n")/started.pid ]] || continue
		reply=$(rcli_at "$n" FLUSHALL)
		[[ $reply == OK || $reply == READONLY* ]] || return 1
	done
}

replica_up() {
	[[ $(redis_info_field replication master_link_status "$1") == up ]]
}

url_of() { echo "redis://127.0.0.1:$(redis_port "$1")"; }

key_on() { [[ $(rcli_at "$1" EXISTS "$2") == 1 ]]; }
key_gone_on() { ! key_on "$@"; }
# key_asking_gone_on NODE KEY: KEY is not on NODE, which imports its slot.
key_asking_gone_on() {
	[[ $(printf 'ASKING\nEXISTS %s\n' "$2" | rcli_at "$1" | tail -n 1) != 1 ]]
}
slot_of() { rcli_at c1 CLUSTER KEYSLOT "$1"; }

@test "a name whose slot lives on each master runs through a node that does not serve it" {
	local owner via name
	for owner in "${NODES[@]}"; do
		name=$(name_on "$owner")
		via=$(not_node "$owner")
		run -0 --separate-stderr redlock -u "$(url_of "$via")" "$name" \
			sh -c 'redis-cli -p "$1" EXISTS "$REDLOCK_KEY"' sh \
			"$(redis_port "$owner")"
		assert_output 1
		assert_equal "$stderr" ''
		assert key_gone_on "$owner" "redlock:$name"
		# A node's unix socket leads to the cluster as well.
		run -0 redlock -u "unix://$(redis_sock "$via")" "$name" echo ran
		assert_output ran
	done
}

@test "acquire, extend and release go through any node, each a different one" {
	local name token
	name=$(name_on c3)
	token=$(redlock acquire -t 20s -u "$(url_of c1)" "$name")
	assert_regex "$token" "$UUID_RE"
	assert key_on c3 "redlock:$name"
	run -0 redlock extend -t 60s -u "$(url_of c2)" "$name" "$token"
	assert [ "$(rcli_at c3 PTTL "redlock:$name")" -gt 20000 ]
	run -1 redlock release -u "$(url_of c1)" "$name" not-the-token
	run -0 redlock release -u "$(url_of c3)" "$name" "$token"
	assert key_gone_on c3 "redlock:$name"
}

@test "status and break work through any node" {
	local name token
	name=$(name_on c2)
	token=$(redlock acquire -u "$(url_of c3)" "$name")
	run -0 redlock status -u "$(url_of c1)" "$name"
	assert_line 'state:   held'
	assert_line --regexp '^holder:  .*@.* pid [0-9]+$'
	run -0 --separate-stderr redlock break -u "$(url_of c3)" "$name"
	assert_regex "$stderr" "removed lock '$name'"
	run -1 redlock status -u "$(url_of c1)" "$name"
	assert_line 'state:   free'
	assert key_gone_on c2 "redlock:$name"
}

@test "a renewal through a node that does not serve the slot keeps the lock" {
	local name
	name=$(name_on c1)
	hold_lock h -t 1s -u "$(url_of c2)" "$name"
	assert stays_false -t 2 key_gone_on c1 "redlock:$name"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err h)" ''
}

@test "names with braces keep all of a lock's keys in its slot (no CROSSSLOT)" {
	local name slot owner n=0 prefix
	for prefix in redlock: 'app}:' '{app}:'; do
		for name in 'deploy}v2' '}' '{}x' '{job}a' '{job}b' 'x{y}z' '{' \
			'a{b' ; do
			slot=$(slot_of "$prefix$name")
			owner=$(owner_of "$prefix$name")
			# While held: the lock, its fencing counter and its metadata
			# all in the lock's slot, on its owner.
			run -0 --separate-stderr redlock -p "$prefix" \
				-u "$(url_of "$(not_node "$owner")")" "$name" \
				redis-cli -p "$(redis_port "$owner")" \
				CLUSTER COUNTKEYSINSLOT "$slot"
			assert [ "$output" -ge 3 ]
			assert_equal "$stderr" ''
			n=$((n + 1))
		done
	done
	assert_equal "$n" 24
}

@test "names with the same hash tag share a slot and a node" {
	local a b
	a=$(slot_of 'redlock:{job}a')
	b=$(slot_of 'redlock:{job}b')
	assert_equal "$a" "$b"
	run -0 redlock -u "$(url_of c1)" '{job}a' \
		redlock -n -u "$(url_of c2)" '{job}b' true
}

@test "a waiter through one node is woken by a release through another" {
	local name owner
	name=$(name_on c2)
	hold_lock h -u "$(url_of c1)" "$name"
	bg_start w "$RL" -u "$(url_of c3)" "$name" touch "$BATS_TEST_TMPDIR/w.got"
	# The waiter blocks on the wake list where it lives, on c2.
	wait_until -t 10 blocked_on c2
	release_lock h
	assert_equal "$BG_STATUS" 0
	local t0 t1
	t0=$(now_ms)
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 10
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 3000)" ]
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}
blocked_on() { rcli_at "$1" CLIENT LIST | grep -q 'cmd=blpop'; }

@test "list shows the locks of every master, through any node" {
	local n names=() via
	for n in "${NODES[@]}"; do
		names+=("$(name_on "$n")")
		redlock acquire -u "$(url_of c1)" "${names[-1]}" >/dev/null
	done
	for via in "${NODES[@]}"; do
		run -0 redlock list -u "$(url_of "$via")"
		assert_equal "${#lines[@]}" 3
		for n in "${names[@]}"; do
			assert_line --regexp "^$n "
		done
	done
	run -0 redlock list --json -u "$(url_of c2)" "${names[0]}"
	assert_equal "${#lines[@]}" 1
	assert_line --partial "\"name\":\"${names[0]}\""
}

@test "two URLs of one cluster are one server with two seed nodes, not a quorum" {
	run -0 --separate-stderr redlock -v -u "$(url_of c1)" -u "$(url_of c3)" \
		name touch "$BATS_TEST_TMPDIR/ran"
	assert_regex "$stderr" 'nodes of one Redis Cluster: one server of the quorum'
	assert [ -e "$BATS_TEST_TMPDIR/ran" ]
	run -1 redlock status -u "$(url_of c2)" -u "$(url_of c1)" name
	assert_line 'state:   free'
	# A replica is a node of the cluster too.
	run -0 redlock -u "$(url_of r1)" -u "$(url_of c1)" name true
	# A node given twice is still the same server twice.
	run -64 redlock -u "$(url_of c1)" -u "$(url_of c1)" name true
	# A cluster has database 0 only: a URL that names another is refused,
	# not merged with its database left out.
	run -64 --separate-stderr redlock -u "$(url_of c1)/0" -u "$(url_of c1)/1" name \
		touch "$BATS_TEST_TMPDIR/db"
	assert_regex "$stderr" 'one Redis Cluster, which has only database 0, not 1$'
	run -64 --separate-stderr redlock -u "$(url_of c2)/1" -u "$(url_of c1)" name \
		touch "$BATS_TEST_TMPDIR/db"
	assert [ ! -e "$BATS_TEST_TMPDIR/db" ]
}

@test "a cluster and two independent servers make a quorum of three" {
	start_redis s1 --tcp
	start_redis s2 --tcp
	local name
	name=$(name_on c2)
	run -0 redlock -u "$(url_of c1)" -u "$(url_of s1)" -u "$(url_of s2)" \
		"$name" echo ran
	assert_output ran
	# Two seed nodes of the cluster are still one server of three: with
	# s2 gone, the cluster and s1 are a majority, and the lock is held
	# on the cluster once.
	stop_redis s2
	run -0 redlock -u "$(url_of c1)" -u "$(url_of s1)" -u "$(url_of c3)" \
		-u "$(url_of s2)" "$name" sh -c 'redis-cli -p "$1" EXISTS "$REDLOCK_KEY"' \
		sh "$(redis_port c2)"
	assert_output 1
	stop_redis s1
	run -69 redlock -u "$(url_of c1)" -u "$(url_of s1)" -u "$(url_of c3)" \
		-u "$(url_of s2)" "$name" true
}

# MIGRATE the lock's keys (the lock, and its auxiliary keys, whose
# names hold a NUL byte: see proto.c) from node $1 to node $2.
migrate_lock() {
	MIG_SOCK=$(redis_sock "$1") MIG_PORT=$(redis_port "$2") MIG_KEY=$3 \
		/usr/bin/python3 - <<'EOF'
import os, redis
r = redis.Redis(unix_socket_path=os.environ["MIG_SOCK"])
k = os.environ["MIG_KEY"].encode()
keys = [k] + [b"{" + k + b"}\0" + s for s in (b"fence", b"holder", b"wake", b"waiting")]
print(r.execute_command("MIGRATE", "127.0.0.1", os.environ["MIG_PORT"], "",
                        0, 5000, "KEYS", *keys).decode())
EOF
}

@test "a lock whose slot migrates while its command runs is renewed on the new owner" {
	# A renewal touches only keys that exist while the lock is held (the
	# lock and its holder's record), so a migrating slot serves it where
	# they are: on the source, then on the target through ASK.
	local name key slot src=c1 dst=c2 sid did n
	name=$(name_on "$src")
	key=redlock:$name
	slot=$(slot_of "$key")
	sid=$(rcli_at "$src" CLUSTER MYID)
	did=$(rcli_at "$dst" CLUSTER MYID)
	# (-t 2s: a renewal that follows MOVED reconnects within its 200 ms
	# even on a loaded machine, so stderr stays empty.)
	hold_lock h -t 2s -u "$(url_of c3)" "$name"
	assert_equal "$(rcli_at "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$sid")" OK
	assert_equal "$(rcli_at "$src" CLUSTER SETSLOT "$slot" MIGRATING "$did")" OK
	# Migrating, its keys still on the source: renewed there.
	assert stays_false -t 2.5 key_gone_on "$src" "$key"
	assert_equal "$(migrate_lock "$src" "$dst" "$key")" OK
	# Keys moved, slot not yet: renewed on the new node through ASK.
	assert stays_false -t 2.5 key_asking_gone_on "$dst" "$key"
	# The target first, then the source (as the Redis manual orders it):
	# a target told before the source never sends MOVED back to it, so
	# a renewal in between cannot bounce between the two.
	for n in "$dst" "$src" c3; do
		assert_equal "$(rcli_at "$n" CLUSTER SETSLOT "$slot" NODE "$did")" OK
	done
	# The slot moved: renewed on its new owner after MOVED.
	assert stays_false -t 2.5 key_gone_on "$dst" "$key"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err h)" ''
	assert key_gone_on "$dst" "$key"
	# And the next run goes where the slot is now.
	run -0 redlock -u "$(url_of "$src")" "$name" true
}

# migrate_some SRC DST KEY...: MIGRATE the KEYs from node SRC to DST;
# migrate_some SRC DST -SLOT: every key of SLOT that SRC has.
migrate_some() {
	MIG_SOCK=$(redis_sock "$1") MIG_PORT=$(redis_port "$2") \
		/usr/bin/python3 - "${@:3}" <<'EOF'
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["MIG_SOCK"])
keys = [k.encode() for k in sys.argv[1:]]
if sys.argv[1].startswith("-"):
    keys = r.execute_command("CLUSTER", "GETKEYSINSLOT", int(sys.argv[1][1:]), 1000)
print(r.execute_command("MIGRATE", "127.0.0.1", os.environ["MIG_PORT"], "",
                        0, 5000, "KEYS", *keys).decode())
EOF
}

# tag_on NODE: a hash tag whose slot NODE serves.
tag_on() { first_on "$1" '{' t '}'; }

@test "shared and exclusive holders whose keys are split mid-migration keep their locks" {
	# A renewal that touches several keys gets TRYAGAIN from both nodes
	# while some of them have moved (a command on several keys needs
	# them all on one node); a migration is not a lost key, so the
	# holders renew key by key, each where it is, and keep their locks.
	local tag src=c3 dst=c1 slot sid did n s x
	tag=$(tag_on "$src")
	s="{$tag}s" x="{$tag}x"
	slot=$(slot_of "{$tag}")
	sid=$(rcli_at "$src" CLUSTER MYID)
	did=$(rcli_at "$dst" CLUSTER MYID)
	# -t 4s: the first renewal, 1.3 s after the grant, extends the
	# exclusive holder's record too, and comes after the split.
	hold_lock sh -t 4s -s -u "$(url_of c2)" "$s"
	hold_lock xh -t 4s -u "$(url_of c2)" "$x"
	assert_equal "$(rcli_at "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$sid")" OK
	assert_equal "$(rcli_at "$src" CLUSTER SETSLOT "$slot" MIGRATING "$did")" OK
	# The locks move; their holders' records and the shared holders'
	# set stay: every renewal of either finds its keys on two nodes.
	assert_equal "$(migrate_some "$src" "$dst" "redlock:$s" "redlock:$x")" OK
	assert [ "$(rcli_at "$src" CLUSTER COUNTKEYSINSLOT "$slot")" -ge 3 ]
	# Longer than a lease: renewed, on both nodes, all along.
	assert stays_false -t 5 key_asking_gone_on "$dst" "redlock:$s"
	assert stays_false -t 0.5 key_asking_gone_on "$dst" "redlock:$x"
	assert [ "$(rcli_at "$src" CLUSTER COUNTKEYSINSLOT "$slot")" -ge 3 ]
	# The migration ends.
	assert_equal "$(migrate_some "$src" "$dst" "-$slot")" OK
	for n in "${NODES[@]}"; do
		assert_equal "$(rcli_at "$n" CLUSTER SETSLOT "$slot" NODE "$did")" OK
	done
	assert stays_false -t 1.5 key_gone_on "$dst" "redlock:$s"
	release_lock sh
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err sh)" ''
	release_lock xh
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err xh)" ''
	assert key_gone_on "$dst" "redlock:$s"
	assert key_gone_on "$dst" "redlock:$x"
}

# start_migrating SLOT SRC DST: the Redis manual's first two steps of
# moving SLOT from node SRC to node DST (the target first).
start_migrating() {
	assert_equal "$(rcli_at "$3" CLUSTER SETSLOT "$1" IMPORTING \
		"$(rcli_at "$2" CLUSTER MYID)")" OK
	assert_equal "$(rcli_at "$2" CLUSTER SETSLOT "$1" MIGRATING \
		"$(rcli_at "$3" CLUSTER MYID)")" OK
}

# end_migration SLOT DST: every node says DST serves SLOT (the target
# first, as the Redis manual orders it).
end_migration() {
	local n
	for n in "$2" "${NODES[@]}"; do
		assert_equal "$(rcli_at "$n" CLUSTER SETSLOT "$1" NODE \
			"$(rcli_at "$2" CLUSTER MYID)")" OK
	done
}

@test "a holder whose slot is mid-migration shows in status and releases at once" {
	# Mid-migration a script on several keys runs nowhere until the slot
	# has moved: the source answers TRYAGAIN while it lacks one of them
	# (wake and waiting do not exist while nobody waits), the target too.
	# -t 60s: a release that failed would leave NAME held for a minute.
	local name key slot src=c1 dst=c3
	name=$(name_on "$src")
	key=redlock:$name
	slot=$(slot_of "$key")
	hold_lock h -t 60s -u "$(url_of c2)" "$name"
	start_migrating "$slot" "$src" "$dst"
	# Nothing moved yet.
	run -0 --separate-stderr redlock status -u "$(url_of c2)" "$name"
	assert_line 'state:   held'
	assert_line --regexp '^holder:  .*@.* pid [0-9]+$'
	# The lock moves, its holder's record stays: the lock's keys are on
	# two nodes.
	assert_equal "$(migrate_some "$src" "$dst" "$key")" OK
	run -0 --separate-stderr redlock status -u "$(url_of "$src")" "$name"
	assert_line 'state:   held'
	assert_line --regexp '^holder:  .*@.* pid [0-9]+$'
	assert_equal "$stderr" ''
	run -0 redlock list -u "$(url_of c2)"
	assert_line --regexp "^$name "
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err h)" ''
	assert key_asking_gone_on "$dst" "$key"
	assert key_gone_on "$src" "$key"
	# Once the slot has moved, the next holder is granted at once (not
	# after the minute a lock left behind would last).
	end_migration "$slot" "$dst"
	run -0 redlock -n -u "$(url_of "$src")" "$name" true
}

@test "after a migration the holder's status and release go to the new owner (MOVED)" {
	local name key slot src=c2 dst=c1
	name=$(name_on "$src")
	key=redlock:$name
	slot=$(slot_of "$key")
	hold_lock h -t 60s -u "$(url_of "$src")" "$name"
	start_migrating "$slot" "$src" "$dst"
	assert_equal "$(migrate_some "$src" "$dst" "-$slot")" OK
	end_migration "$slot" "$dst"
	run -0 --separate-stderr redlock status -u "$(url_of "$src")" "$name"
	assert_line 'state:   held'
	assert_line --regexp '^holder:  .*@.* pid [0-9]+$'
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err h)" ''
	assert key_gone_on "$dst" "$key"
	run -0 redlock -n -u "$(url_of "$src")" "$name" true
}

@test "mid-migration the verbs and a shared holder work key by key" {
	# acquire before, then status, extend, release by token, break, and a
	# --limit holder's status and release, while the lock's keys are on
	# two nodes.
	local tag src=c3 dst=c2 slot token x s
	tag=$(tag_on "$src")
	x="{$tag}x" s="{$tag}s"
	slot=$(slot_of "{$tag}")
	token=$(redlock acquire -t 60s -u "$(url_of c1)" "$x")
	hold_lock sh -t 60s --limit 2 -u "$(url_of c1)" "$s"
	start_migrating "$slot" "$src" "$dst"
	assert_equal "$(migrate_some "$src" "$dst" "redlock:$x" "redlock:$s")" OK
	run -0 redlock status -u "$(url_of c1)" "$x"
	assert_line 'state:   held'
	run -0 redlock extend -t 90s -u "$(url_of c1)" "$x" "$token"
	assert [ "$(printf 'ASKING\nPTTL %s\n' "redlock:$x" |
		rcli_at "$dst" | tail -n 1)" -gt 60000 ]
	run -0 --separate-stderr redlock release -u "$(url_of c1)" "$x" "$token"
	assert_equal "$stderr" ''
	assert key_asking_gone_on "$dst" "redlock:$x"
	run -0 redlock status -u "$(url_of c1)" "$s"
	assert_line --regexp '^holder:  .*@.* pid [0-9]+'
	release_lock sh
	assert_equal "$BG_STATUS" 0
	assert_equal "$(bg_err sh)" ''
	assert key_asking_gone_on "$dst" "redlock:$s"
	# break: a lock left behind mid-migration is removed.
	end_migration "$slot" "$dst"
	token=$(redlock acquire -t 60s -u "$(url_of c1)" "$x")
	start_migrating "$slot" "$dst" "$src"
	assert_equal "$(migrate_some "$dst" "$src" "redlock:$x")" OK
	run -0 --separate-stderr redlock break -u "$(url_of c1)" "$x"
	assert_regex "$stderr" "removed lock '\\$x'|removed lock"
	assert key_asking_gone_on "$src" "redlock:$x"
	end_migration "$slot" "$src"
	run -0 redlock -n -u "$(url_of c1)" "$x" true
}

# tryagains NODE: how many TRYAGAIN errors NODE has answered.
tryagains() {
	local c
	c=$(redis_info_field errorstats errorstat_TRYAGAIN "$1")
	c=${c#count=}
	echo "${c:-0}"
}
tryagain_since() { (($(tryagains "$1") > $2)); }

@test "a free lock whose slot is migrating is retried (TRYAGAIN), and granted once it has moved" {
	local name key slot src=c3 dst=c2 sid did n t0 t1 before
	name=$(name_on "$src")
	key=redlock:$name
	slot=$(slot_of "$key")
	sid=$(rcli_at "$src" CLUSTER MYID)
	did=$(rcli_at "$dst" CLUSTER MYID)
	assert_equal "$(rcli_at "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$sid")" OK
	assert_equal "$(rcli_at "$src" CLUSTER SETSLOT "$slot" MIGRATING "$did")" OK
	# The source has none of the keys (ASK), the target not all (TRYAGAIN):
	# retried for as long as an attempt may take, then 69.  (-t 2s: an
	# attempt's 200 ms leave room for the connection to the target on a
	# loaded machine, so that the last error is TRYAGAIN.)
	t0=$(now_ms)
	run -69 --separate-stderr redlock -t 2s -u "$(url_of c1)" "$name" \
		touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert_regex "$stderr" 'TRYAGAIN'
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert [ $((t1 - t0)) -lt "$(scale_ms 8000)" ]
	before=$(tryagains "$dst")
	bg_start w "$RL" -u "$(url_of c1)" "$name" touch "$BATS_TEST_TMPDIR/w.got"
	wait_until -t 10 tryagain_since "$dst" "$before"
	for n in "${NODES[@]}"; do
		assert_equal "$(rcli_at "$n" CLUSTER SETSLOT "$slot" NODE "$did")" OK
	done
	bg_wait w 20
	assert_equal "$BG_STATUS" 0
	assert [ -e "$BATS_TEST_TMPDIR/w.got" ]
}

@test "a cluster that serves no slot (CLUSTERDOWN) is 69 within seconds" {
	start_redis lone --tcp --cluster-enabled yes --cluster-port "$(free_port)" \
		--cluster-config-file nodes.conf
	local t0 t1
	t0=$(now_ms)
	run -69 --separate-stderr redlock -w 30s -u "$(url_of lone)" name \
		touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert_regex "$stderr" 'CLUSTERDOWN'
	assert [ $((t1 - t0)) -lt "$(scale_ms 8000)" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	run -69 redlock status -u "$(url_of lone)" name
	stop_redis lone
}

@test "list and runs on a cluster whose node answers CLUSTERDOWN are 69: they do not leave out what it holds and exit 0" {
	start_redis lone --tcp --cluster-enabled yes --cluster-port "$(free_port)" \
		--cluster-config-file nodes.conf
	local u
	u=$(url_of lone)
	assert_equal "$(rcli_at lone CLUSTER ADDSLOTSRANGE 0 16383)" OK
	wait_until -t 10 cluster_ok lone
	run -0 redlock acquire -u "$u" -t 1m held
	run -0 redlock -u "$u" --record ran true
	run -0 redlock list -u "$u"
	assert_line --regexp '^held '
	# One slot unserved: the node says CLUSTERDOWN to every key.
	assert_equal "$(rcli_at lone CLUSTER DELSLOTS 5)" OK
	wait_until -t 10 cluster_state_is lone fail
	run -69 --separate-stderr redlock list -u "$u"
	assert_regex "$stderr" 'CLUSTERDOWN'
	run -69 --separate-stderr redlock list --json -u "$u"
	run -69 --separate-stderr redlock runs -u "$u"
	assert_regex "$stderr" 'CLUSTERDOWN'
	stop_redis lone
}
cluster_state_is() {
	[[ $(rcli_at "$1" CLUSTER INFO | tr -d '\r' | sed -n 's/^cluster_state://p') == "$2" ]]
}

# key_on_replica NODE KEY: replica NODE has a copy of KEY.
key_on_replica() {
	[[ $(printf 'READONLY\nEXISTS %s\n' "$2" | rcli_at "$1" | tail -n 1) == 1 ]]
}

is_master() { [[ $(rcli_at "$1" ROLE | head -n 1) == master ]]; }
# renewed_on NODE KEY MS: KEY's PTTL on NODE is above MS.
renewed_on() { (($(rcli_at "$1" PTTL "$2") > $3)); }

# It kills c2 for good.
@test "a lock survives the failover of the master its URL names; a new run finds the cluster through another -u" {
	local name key p0
	name=$(name_on c2)
	key=redlock:$name
	# The lease must outlast a failover on a loaded machine (node
	# timeout, election): 40 s, renewed every 13 s.
	hold_lock h -t 40s -u "$(url_of c2)" "$name"
	wait_until -t 10 key_on_replica r2 "$key"
	kill_redis c2
	# The replica takes over by itself, once the masters agree that c2
	# has failed (cluster-node-timeout).
	wait_until -t 40 is_master r2
	wait_until -t 20 cluster_ok c1 c3 r2
	p0=$(rcli_at r2 PTTL "$key")
	assert [ "$p0" -gt 0 ]
	# Renewed on the new master (a PTTL only goes up by a renewal),
	# through the nodes the holder learnt at connect: its URL's node is
	# gone.
	wait_until -t 20 renewed_on r2 "$key" "$p0" ||
		fail "no renewal on r2: $(cat "$BATS_TEST_TMPDIR/h.err")"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert key_gone_on r2 "$key"
	# A new run through the dead node's URL and another node's.
	run -0 redlock -u "$(url_of c2)" -u "$(url_of c3)" "$name" echo ran
	assert_output ran
	run -0 redlock -u "$(url_of c2)" -u "$(url_of c3)" -s "$name" echo ran
}

# Next to last: it kills c1 for good.
@test "a lock survives its master's failover to a replica" {
	local name key
	name=$(name_on c1)
	key=redlock:$name
	hold_lock h -t 5s -u "$(url_of c3)" "$name"
	wait_until -t 10 key_on_replica r1 "$key"
	kill_redis c1
	assert_equal "$(rcli_at r1 CLUSTER FAILOVER TAKEOVER)" OK
	wait_until -t 10 key_on r1 "$key"
	# Renewed on the new master: without it the key expires in 5 s.
	assert stays_false -t 6 key_gone_on r1 "$key"
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert key_gone_on r1 "$key"
}

# Last: it stops the cluster.
@test "a cluster whose nodes are all stopped is 69 within seconds" {
	local n urls=()
	for n in "${NODES[@]}" r1 r2; do
		urls+=("$(url_of "$n")")
		stop_redis "$n"
	done
	local t0 t1
	t0=$(now_ms)
	run -69 redlock -w 30s -u "${urls[1]}" name true
	run -69 redlock list -u "${urls[0]}"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 8000)" ]
}
