# shellcheck shell=bash
#
# cluster_helpers.bash - looking at a Redis Cluster that a test file made
# of the nodes named in its NODES array (cluster.bats, cluster-tls.bats).
# Load after helpers.

# start_cluster_node NAME: a redis-server on TCP that can join a cluster.
start_cluster_node() {
	start_redis "$1" --tcp --cluster-enabled yes --cluster-port "$(free_port)" \
		--cluster-node-timeout 5000 --cluster-config-file nodes.conf
}

# cluster_create: join the nodes of NODES, started with --tcp and
# --cluster-enabled yes, into one cluster of masters, and wait until
# every one of them says it is up.
cluster_create() {
	local n addrs=()
	for n in "${NODES[@]}"; do
		addrs+=("127.0.0.1:$(redis_port "$n")")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 \
		--cluster-yes >"$BATS_FILE_TMPDIR/create.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/create.log" >&2; return 1; }
	wait_until -t 30 cluster_ok
}

# cluster_ok [NODE...]: every node (default: the masters) says the
# cluster is up.
cluster_ok() {
	local n
	(($#)) || set -- "${NODES[@]}"
	for n in "$@"; do
		[[ $(rcli_at "$n" CLUSTER INFO | tr -d '\r' |
			sed -n 's/^cluster_state://p') == ok ]] || return 1
	done
}

# owner_of KEY: the node that serves KEY (the others answer MOVED).
owner_of() {
	local n
	for n in "${NODES[@]}"; do
		if [[ $(rcli_at "$n" EXISTS "$1") =~ ^[0-9]+$ ]]; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

# first_on NODE BEFORE STEM AFTER: the first STEM$i (i < 200) such that
# the key BEFORE STEM$i AFTER lives on NODE.
first_on() {
	local i
	for ((i = 0; i < 200; i++)); do
		if [[ $(owner_of "$2$3$i$4") == "$1" ]]; then
			echo "$3$i"
			return 0
		fi
	done
	return 1
}

# name_on NODE [STEM]: a NAME whose lock key lives on NODE.
name_on() { first_on "$1" redlock: "${2:-n}" ''; }

# not_node NODE: another node than NODE.
not_node() {
	local n
	for n in "${NODES[@]}"; do
		[[ $n == "$1" ]] || { echo "$n" && return 0; }
	done
}
