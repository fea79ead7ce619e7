#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Sentinel over TLS (redlock(1), TLS and Passwords; HIGH AVAILABILITY in redlock-protocol(7)): rediss+sentinel:// speaks TLS to the
# sentinels and to the master, each verified.  A TLS-only master (its
# TCP port is TLS; its unix socket serves the checks) watched by a
# sentinel that reaches it over TLS and answers clients on a TLS port.

load helpers
load tls_helpers
load sentinel_helpers

SVC=tls-svc

lifecycle
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	make_pki
	start_tls_redis m good --tls-auth-clients no || return 1
	STLS_PORT=$(free_port)
	echo "$STLS_PORT" >"$BATS_FILE_TMPDIR/s.tls-port"
	start_sentinel s "$SVC" "$(tls_port m)" 1 "tls-port $STLS_PORT" \
		"tls-cert-file $PKI/good.crt" "tls-key-file $PKI/good.key" \
		"tls-ca-cert-file $PKI/ca.crt" "tls-auth-clients no" \
		"tls-replication yes" || return 1
	wait_until -t 20 sentinel_knows_master
	use_redis m
}

sentinel_knows_master() {
	[[ $(sentinel_master_port s "$SVC") == "$(tls_port m)" ]]
}

# The rediss+sentinel:// URL of the service, through the sentinel's TLS
# port.
surl() { echo "rediss+sentinel://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/s.tls-port")/$SVC"; }

@test "rediss+sentinel:// finds the master over TLS and runs the command under the lock" {
	use_redis m
	run -0 --separate-stderr redlock -u "$(surl)" --cacert "$PKI/ca.crt" job \
		sh -c 'redis-cli -s "$1" EXISTS "$REDLOCK_KEY"' sh "$REDIS_SOCK"
	assert_output 1
	assert_equal "$stderr" ''
	assert_equal "$(rcli EXISTS redlock:job)" 0
	# The verbs too.
	tok=$(redlock -u "$(surl)" --cacert "$PKI/ca.crt" acquire -t 30s job)
	run -0 redlock -u "$(surl)" --cacert "$PKI/ca.crt" status job
	run -0 redlock -u "$(surl)" --cacert "$PKI/ca.crt" release job "$tok"
	assert_equal "$(rcli EXISTS redlock:job)" 0
}

@test "the sentinel's certificate is verified: an untrusted CA is 69 and nothing is taken" {
	use_redis m
	run -69 --separate-stderr redlock -u "$(surl)" --cacert "$PKI/otherca.crt" \
		job touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: no sentinel of '$SVC' answered: .*certificate verify failed"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$(rcli EXISTS redlock:job)" 0
}

@test "redis+sentinel:// to a TLS sentinel port is 69 with a hint, not a hang" {
	local t0
	t0=$(now_ms)
	run -69 --separate-stderr redlock -u "redis+sentinel://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/s.tls-port")/$SVC" \
		job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" 'TLS port'
	(($(now_ms) - t0 < $(scale_ms 3000)))
}
