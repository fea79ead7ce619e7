# shellcheck shell=bash
#
# cluster_helpers.bash - looking at a Redis Cluster that a test file made
# of the nodes named in its NODES array (cluster.bats, cluster-tls.bats).
# Load after helpers.

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

# name_on NODE [STEM]: a NAME whose lock key lives on NODE.
name_on() {
	local i
	for ((i = 0; i < 200; i++)); do
		if [[ $(owner_of "redlock:${2:-n}$i") == "$1" ]]; then
			echo "${2:-n}$i"
			return 0
		fi
	done
	return 1
}

# not_node NODE: another node than NODE.
not_node() {
	local n
	for n in "${NODES[@]}"; do
		[[ $n == "$1" ]] || { echo "$n" && return 0; }
	done
}
