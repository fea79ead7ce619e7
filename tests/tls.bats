#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# TLS (redlock(1), TLS and Passwords): rediss:// and --tls against redis-servers with TLS ports
# that this file starts, with certificates made by openssl(1) at test
# time: verification of the chain and of the name (DNS name, IP address,
# --sni), --insecure, mutual TLS, bad files as usage errors before any
# connection, TLS to a plain server and back, renewal, waiting and every
# verb over TLS, OpenSSL loaded only when TLS is used.

load helpers

load tls_helpers

lifecycle
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	make_pki
	start_tls_redis tls good --tls-auth-clients no
	start_tls_redis named named --tls-auth-clients no
	start_tls_redis mutual good --tls-auth-clients yes
	start_redis plain --tcp
	use_redis tls
}
# shellcheck disable=SC2317 # called by lifecycle
test_setup() { flush_servers named mutual; }

# A port where nothing listens: a run that got that far would say 69.
dead_url() { echo "rediss://127.0.0.1:$(dead_port)"; }

# assert_one_line_naming SERVER REGEX: stderr is one diagnostic line that
# names the server and matches REGEX.
assert_one_line_naming() {
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: .*$1.*$2"
}

# --- verification ---------------------------------------------------------------

@test "a rediss:// URL with --cacert runs the command under the lock over TLS" {
	run -0 --separate-stderr redlock -u "$(tls_url tls)" --cacert "$PKI/ca.crt" \
		job sh -c 'redis-cli -s "$1" EXISTS "$REDLOCK_KEY"' sh "$REDIS_SOCK"
	assert_output 1
	assert_equal "$stderr" ''
	# Released over TLS as well.
	assert_equal "$(rcli EXISTS redlock:job)" 0
}

@test "a host name is verified against the certificate's DNS names" {
	run -0 redlock -u "$(tls_url tls localhost)" --cacert "$PKI/ca.crt" job true
	run -69 --separate-stderr redlock -u "$(tls_url named localhost)" \
		--cacert "$PKI/ca.crt" job touch "$BATS_TEST_TMPDIR/ran"
	assert_one_line_naming "localhost:$(tls_port named)" \
		'certificate verify failed: hostname mismatch$'
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "an IP address is verified against the certificate's IP addresses" {
	run -0 redlock -u "$(tls_url tls 127.0.0.1)" --cacert "$PKI/ca.crt" job true
	run -69 --separate-stderr redlock -u "$(tls_url named 127.0.0.1)" \
		--cacert "$PKI/ca.crt" job true
	assert_one_line_naming "127.0.0.1:$(tls_port named)" \
		'certificate verify failed: IP address mismatch$'
}

@test "a certificate from a CA that is not trusted is refused" {
	# Not in the system's store.
	run -69 --separate-stderr redlock -u "$(tls_url tls)" job true
	assert_one_line_naming "127.0.0.1:$(tls_port tls)" 'certificate verify failed: '
	# Another CA given.
	run -69 --separate-stderr redlock -u "$(tls_url tls)" --cacert "$PKI/otherca.crt" job true
	assert_one_line_naming "127.0.0.1:$(tls_port tls)" 'certificate verify failed: '
	# A directory of CA certificates, hashed as OpenSSL looks them up.
	mkdir "$BATS_TEST_TMPDIR/cas"
	cp "$PKI/ca.crt" "$BATS_TEST_TMPDIR/cas/$(openssl x509 -hash -noout -in "$PKI/ca.crt").0"
	run -0 redlock -u "$(tls_url tls)" --cacertdir "$BATS_TEST_TMPDIR/cas" job true
}

@test "without --cacert the system's store is used, as \$SSL_CERT_DIR and \$SSL_CERT_FILE name it" {
	local dir=$BATS_TEST_TMPDIR/system
	mkdir "$dir"
	cp "$PKI/ca.crt" "$dir/$(openssl x509 -hash -noout -in "$PKI/ca.crt").0"
	SSL_CERT_DIR=$dir run -0 env -u SSL_CERT_FILE "$RL" -u "$(tls_url tls)" job true
	SSL_CERT_FILE=$PKI/ca.crt run -0 env -u SSL_CERT_DIR "$RL" -u "$(tls_url tls)" job true
	# A directory without hashed names: the files named are all there is.
	SSL_CERT_DIR=$PKI SSL_CERT_FILE=$PKI/otherca.crt run -69 redlock -u "$(tls_url tls)" job true
}

@test "--insecure skips the checks of the chain and of the name" {
	run -0 redlock -u "$(tls_url named localhost)" --insecure job true
	REDLOCK_URL=$(tls_url named 127.0.0.1) run -0 redlock --insecure job true
}

@test "--sni sends and verifies the given name instead of the host" {
	run -0 redlock -u "$(tls_url named 127.0.0.1)" --cacert "$PKI/ca.crt" \
		--sni redis.test job true
	REDLOCK_SNI=redis.test run -0 redlock -u "$(tls_url named)" \
		--cacert "$PKI/ca.crt" job true
	run -69 --separate-stderr redlock -u "$(tls_url tls)" --cacert "$PKI/ca.crt" \
		--sni redis.test job true
	assert_one_line_naming "127.0.0.1:$(tls_port tls)" 'hostname mismatch$'
}

@test "a host name is sent as SNI, an address is not, and --sni replaces both" {
	local log=$BATS_TEST_TMPDIR/sni.log
	bg_start sni /usr/bin/python3 -c '
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
def seen(sock, name, c):
    with open(sys.argv[3], "a") as f:
        f.write((name or "-") + "\n")
ctx.sni_callback = seen
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(sys.argv[4], "w") as f:
    f.write(str(s.getsockname()[1]))
for _ in range(200):
    c, _ = s.accept()
    try:
        ctx.wrap_socket(c, server_side=True).close()
    except (OSError, ssl.SSLError):
        c.close()
' "$PKI/good.crt" "$PKI/good.key" "$log" "$BATS_TEST_TMPDIR/sni.port"
	wait_for_file "$BATS_TEST_TMPDIR/sni.port"
	wait_until test -s "$BATS_TEST_TMPDIR/sni.port"
	local port
	port=$(cat "$BATS_TEST_TMPDIR/sni.port")
	run -69 redlock -n -u "rediss://localhost:$port" --cacert "$PKI/ca.crt" job true
	assert_equal "$(sort -u "$log")" localhost
	: >"$log"
	run -69 redlock -n -u "rediss://127.0.0.1:$port" --cacert "$PKI/ca.crt" job true
	assert_equal "$(sort -u "$log")" -
	: >"$log"
	run -69 redlock -n -u "rediss://127.0.0.1:$port" --insecure --sni redis.test job true
	assert_equal "$(sort -u "$log")" redis.test
}

# --- which connections are TLS -----------------------------------------------------

@test "--tls makes every redis:// URL TLS, and REDLOCK_TLS=1 does too" {
	local url
	url="redis://127.0.0.1:$(tls_port tls)"
	run -0 redlock --tls -u "$url" --cacert "$PKI/ca.crt" job true
	REDLOCK_TLS=1 REDLOCK_CACERT=$PKI/ca.crt run -0 redlock -u "$url" job true
	REDLOCK_TLS=1 REDLOCK_CACERT=$PKI/ca.crt REDLOCK_URL=$url run -0 redlock acquire job
	assert_output --regexp "$UUID_RE"
	REDLOCK_TLS=0 run -69 redlock -u "$url" -n job2 true
}

@test "a unix:// URL stays plain with --tls" {
	# A quorum of a plain server's socket and a TLS server.
	run -0 redlock --tls --cacert "$PKI/ca.crt" -u "unix://$(redis_sock plain)" \
		-u "redis://127.0.0.1:$(tls_port tls)" job true
}

@test "a run passes its TLS options on to the command: a nested redlock without options re-enters" {
	local url
	url="redis://127.0.0.1:$(tls_port mutual)"
	# Given on the command line (relative file names too, made absolute:
	# the command changes directory), they reach the command as their
	# variables, in place of inherited ones.
	cd "$PKI"
	REDLOCK_CACERT=/nonexistent REDLOCK_TLS=0 run -0 --separate-stderr \
		redlock --tls -u "$url" --cacert ca.crt --cert client.crt \
		--key client.key --sni localhost job sh -c '
		cd /; env | grep -E "^REDLOCK_(TLS|CACERT|SNI|URL)" | LC_ALL=C sort
		redlock -n job echo inner; echo "inner $?"'
	assert_output "REDLOCK_CACERT=$PKI/ca.crt
REDLOCK_SNI=localhost
REDLOCK_TLS=1
REDLOCK_TLS_CERT=$PKI/client.crt
REDLOCK_TLS_KEY=$PKI/client.key
REDLOCK_URL=$url
inner
inner 0"
	assert_equal "$stderr" ''
	# --insecure is not passed on (no variable turns the checks off): a
	# nested redlock is given it again.
	run -0 --separate-stderr redlock -u "$(tls_url named 127.0.0.1)" --insecure job sh -c \
		'redlock -n job echo inner; redlock --insecure -n job echo "inner $?"'
	assert_output 'inner 69'
	assert_regex "$stderr" 'certificate verify failed'
	# Options that came from the environment stay as they were.
	REDLOCK_TLS=yes REDLOCK_CACERT=$PKI/ca.crt run -0 redlock -u "$(tls_url tls)" \
		job sh -c 'echo "$REDLOCK_TLS $REDLOCK_CACERT"'
	assert_output "yes $PKI/ca.crt"
}

@test "mutual TLS: the server refuses a client without a certificate and accepts --cert and --key" {
	run -69 --separate-stderr redlock -u "$(tls_url mutual)" --cacert "$PKI/ca.crt" job true
	assert_one_line_naming "127.0.0.1:$(tls_port mutual)" "certificate"
	run -0 redlock -u "$(tls_url mutual)" --cacert "$PKI/ca.crt" \
		--cert "$PKI/client.crt" --key "$PKI/client.key" job true
	REDLOCK_TLS_CERT=$PKI/client.crt REDLOCK_TLS_KEY=$PKI/client.key \
		run -0 redlock -u "$(tls_url mutual)" --cacert "$PKI/ca.crt" job true
}

# --- bad files: usage errors before any connection ---------------------------------

@test "an encrypted client key is a usage error naming the file, without a prompt" {
	run -64 --separate-stderr redlock -u "$(dead_url)" --cacert "$PKI/ca.crt" \
		--cert "$PKI/client.crt" --key "$PKI/client-enc.key" job true </dev/null
	assert_usage_error
	assert_regex "${stderr_lines[0]}" "client-enc\.key.*encrypted"
}

@test "a certificate, key or CA file that cannot be read or parsed is a usage error naming it" {
	local url
	url=$(dead_url)
	local -a cases=(
		"--cacert $PKI/missing.pem"
		"--cacert $PKI/garbage.pem"
		"--cacertdir $PKI/no-such-dir"
		"--cert $PKI/missing.crt --key $PKI/client.key"
		"--cert $PKI/garbage.pem --key $PKI/client.key"
		"--cert $PKI/client.crt --key $PKI/garbage.pem"
		"--cert $PKI/client.crt --key $PKI/good.key"
	)
	local c file
	for c in "${cases[@]}"; do
		# shellcheck disable=SC2086 # the words of one case
		run -64 --separate-stderr redlock -u "$url" $c job true
		assert_usage_error
		file=${c##* }
		[[ $c == *garbage.pem* ]] && file=$PKI/garbage.pem
		[[ $c == *missing.crt* ]] && file=$PKI/missing.crt
		assert_regex "${stderr_lines[0]}" "'$file'"
	done
}

@test "TLS files are checked even when no URL uses TLS, and nothing is written" {
	run -64 --separate-stderr redlock -u "unix://$REDIS_SOCK" \
	    --cacert "$PKI/missing.pem" plainfiles true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" "'$PKI/missing.pem'"
	run -64 --separate-stderr redlock -u "unix://$REDIS_SOCK" \
	    --cert "$PKI/client.crt" --key "$PKI/garbage.pem" plainfiles true
	assert_regex "${stderr_lines[0]}" "'$PKI/garbage.pem'"
	run -0 rcli --scan --pattern '*plainfiles*'
	assert_output ''
	run -0 redlock -u "unix://$REDIS_SOCK" --cacert "$PKI/ca.crt" \
	    plainfiles true
}

@test "--cert without --key, and --key without --cert, are usage errors" {
	run -64 --separate-stderr redlock -u "$(dead_url)" --cert "$PKI/client.crt" job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" 'client\.crt.*--key'
	REDLOCK_TLS_KEY=$PKI/client.key run -64 --separate-stderr redlock -u "$(dead_url)" job true
	assert_usage_error
}

@test "the private key is never printed" {
	local body
	body=$(sed -n 2p "$PKI/client.key")
	run -64 --separate-stderr redlock -v -u "$(dead_url)" --cert "$PKI/client.crt" \
		--key "$PKI/good.key" job true
	run -64 --separate-stderr redlock -v -u "$(dead_url)" --cert "$PKI/client.key" \
		--key "$PKI/client.key" job true
	[[ $stderr != *"$body"* && $output != *"$body"* ]] || fail "key printed: $stderr"
	run -0 --separate-stderr redlock -v -u "$(tls_url mutual)" --cacert "$PKI/ca.crt" \
		--cert "$PKI/client.crt" --key "$PKI/client.key" job true
	[[ $stderr != *"$body"* ]] || fail "key printed: $stderr"
}

# --- the wrong protocol ------------------------------------------------------------

@test "a TLS client talking to a plain server gives 69 within the connect timeout" {
	local t0 t1
	t0=$(now_ms)
	run -69 --separate-stderr redlock -u "rediss://127.0.0.1:$(redis_port plain)" \
		--insecure job touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 4000)" ]
	assert_one_line_naming "127.0.0.1:$(redis_port plain)" ''
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a plain client talking to a TLS server gives 69 naming the server" {
	run -69 --separate-stderr redlock -u "redis://127.0.0.1:$(tls_port tls)" job true
	assert_one_line_naming "127.0.0.1:$(tls_port tls)" 'TLS'
}

@test "a plain connection that a proxy with nothing behind it closes gets no TLS hint" {
	local d=$BATS_TEST_TMPDIR
	# proxy.py accepts, fails to reach its upstream (no such socket) and
	# closes each connection at once.
	bg_start proxy /usr/bin/python3 "$TESTS_DIR/proxy.py" "$d/nothing.sock" \
		"$d/proxy.port" "$d/proxy.control" "$d/proxy.status"
	wait_for_file "$d/proxy.port" 10
	run -69 --separate-stderr redlock -u "redis://127.0.0.1:$(cat "$d/proxy.port")" job true
	assert_one_line_naming "127.0.0.1:$(cat "$d/proxy.port")" ''
	refute_regex "$stderr" 'TLS'
}

# --- the lock over TLS ---------------------------------------------------------------

@test "renewal over TLS keeps a short lock for a longer command" {
	run -0 --separate-stderr redlock -t 1s -u "$(tls_url tls)" --cacert "$PKI/ca.crt" \
		job sh -c 'sleep 3; redis-cli -s "$1" GET "$REDLOCK_KEY"' sh "$REDIS_SOCK"
	assert_output --regexp "$UUID_RE"
	assert_equal "$stderr" ''
}

@test "a TLS holder whose connections are killed reconnects and keeps the lock" {
	hold_lock h -t 1s -u "$(tls_url tls)" --cacert "$PKI/ca.crt" job
	local i
	for ((i = 0; i < 3; i++)); do
		rcli CLIENT KILL TYPE normal >/dev/null
		stays_false -t 0.5 key_absent redlock:job
	done
	release_lock h
	assert_equal "$BG_STATUS" 0
}

@test "every verb works over TLS" {
	export REDLOCK_URL
	REDLOCK_URL=$(tls_url tls localhost)
	export REDLOCK_CACERT=$PKI/ca.crt
	local token
	token=$(redlock acquire -t 30s job)
	[[ $token =~ $UUID_RE ]]
	run -0 redlock status job
	run -0 redlock list
	assert_output --partial job
	run -0 redlock extend -t 60s job "$token"
	run -0 redlock release job "$token"
	run -1 redlock status job
	redlock acquire job >/dev/null
	run -0 redlock break job
	# A quorum of TLS servers and a plain one, with a client certificate
	# for the one that wants it.
	run -1 redlock -n -u "$(tls_url tls)" -u "unix://$(redis_sock plain)" \
		-u "$(tls_url mutual)" --cert "$PKI/client.crt" \
		--key "$PKI/client.key" break job
}

@test "a waiter over TLS wakes as soon as the holder releases" {
	hold_lock h -u "$(tls_url tls)" --cacert "$PKI/ca.crt" job
	local c0
	c0=$(clients_count)
	bg_start w "$RL" -u "$(tls_url tls)" --cacert "$PKI/ca.crt" job true
	wait_until eval '(($(clients_count) > c0))'
	wait_until eval 'rcli CLIENT LIST | grep -q cmd=blpop'
	release_lock h
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "OpenSSL is loaded only by a run that uses TLS" {
	# redlock is not dumpable: only root reads its maps (a package build
	# runs the suite as a user).
	(($(id -u) == 0)) || skip "reading redlock's /proc/PID/maps needs root"
	hold_lock plain -u "unix://$REDIS_SOCK" plainjob
	hold_lock tls -u "$(tls_url tls)" --cacert "$PKI/ca.crt" tlsjob
	run ! grep -q libssl "/proc/$(bg_pid plain)/maps"
	run -0 grep -q libssl "/proc/$(bg_pid tls)/maps"
	release_lock plain
	release_lock tls
}
