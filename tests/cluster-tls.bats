#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Redis Cluster over TLS (redlock(1), TLS and Passwords; REDIS CLUSTER in redlock-protocol(7)): TLS applies to every node.  Three
# masters with TLS ports and a TLS cluster bus; redlock reaches each
# name's owner through a node that does not serve it, following MOVED to
# the owner's TLS port and verifying the owner's certificate, and list
# scans every master over TLS.

load helpers
load tls_helpers
load cluster_helpers

NODES=(t1 t2 t3)

lifecycle
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	make_pki
	local n
	for n in "${NODES[@]}"; do
		start_tls_redis "$n" good --tcp --tls-auth-clients no \
			--tls-cluster yes --cluster-enabled yes \
			--cluster-port "$(free_port)" --cluster-node-timeout 5000 \
			--cluster-config-file nodes.conf || return 1
	done
	cluster_create
}
test_setup() {
	unset REDLOCK_PREFIX REDLOCK_PASSWORD REDISCLI_AUTH REDLOCK_HELD REDLOCK_URL
	local n
	for n in "${NODES[@]}"; do
		[[ $(rcli_at "$n" FLUSHALL) == OK ]] || return 1
	done
}

# The TLS URL of node N.
turl() { echo "rediss://127.0.0.1:$(tls_port "$1")"; }

@test "a name on each master runs over TLS through a node that does not serve it" {
	local owner via name
	for owner in "${NODES[@]}"; do
		name=$(name_on "$owner" tls)
		via=$(not_node "$owner")
		run -0 --separate-stderr redlock -u "$(turl "$via")" \
			--cacert "$PKI/ca.crt" "$name" \
			sh -c 'redis-cli -s "$1" EXISTS "$REDLOCK_KEY"' sh "$(redis_sock "$owner")"
		assert_output 1
		assert_equal "$stderr" ''
		assert_equal "$(rcli_at "$owner" EXISTS "redlock:$name")" 0
	done
}

@test "the owner's certificate is verified after a redirection" {
	local owner via name
	owner=t2
	name=$(name_on "$owner" vf)
	via=$(not_node "$owner")
	# The CA that signed every node's certificate is not trusted: the
	# first node is refused, nothing is taken.
	run -69 --separate-stderr redlock -u "$(turl "$via")" \
		--cacert "$PKI/otherca.crt" "$name" touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" 'certificate verify failed'
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$(rcli_at "$owner" EXISTS "redlock:$name")" 0
}

@test "list over TLS shows the locks held on every master" {
	local n name names=() tok toks=()
	for n in "${NODES[@]}"; do
		name=$(name_on "$n" ls)
		tok=$(redlock -u "$(turl t1)" --cacert "$PKI/ca.crt" acquire -t 30s "$name") ||
			fail "acquire $name"
		names+=("$name")
		toks+=("$tok")
	done
	run -0 --separate-stderr redlock -u "$(turl t1)" --cacert "$PKI/ca.crt" list
	for name in "${names[@]}"; do
		grep -q "^$name " <<<"$output" || fail "list misses $name: $output"
	done
	for n in 0 1 2; do
		redlock -u "$(turl t3)" --cacert "$PKI/ca.crt" release "${names[n]}" \
			"${toks[n]}" || fail "release ${names[n]}"
		assert_equal "$(rcli_at "${NODES[n]}" EXISTS "redlock:${names[n]}")" 0
	done
}
