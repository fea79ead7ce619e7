# shellcheck shell=bash
#
# tls_helpers.bash - certificates made with openssl(1) at test time, and
# redis-servers with TLS ports, for the files that test TLS (tls.bats,
# sentinel-tls.bats, cluster-tls.bats).  Load after helpers.

# --- certificates -----------------------------------------------------------

# new_key NAME: an EC P-256 key (fast to make) in $PKI/NAME.key.
new_key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$PKI/$1.key" 2>/dev/null
}

# new_ca NAME: a self-signed CA certificate $PKI/NAME.crt.
new_ca() {
	new_key "$1" &&
		openssl req -x509 -new -key "$PKI/$1.key" -out "$PKI/$1.crt" -days 2 \
			-subj "/CN=redlock test $1" 2>/dev/null
}

# new_cert NAME CA EXTENSIONS: a certificate for NAME signed by CA, with
# the given extension lines (subjectAltName=..., extendedKeyUsage=...).
new_cert() {
	local name=$1 ca=$2
	new_key "$name" || return 1
	printf '%s\n' "$3" >"$PKI/$name.ext"
	openssl req -new -key "$PKI/$name.key" -out "$PKI/$name.csr" \
		-subj "/CN=$name" 2>/dev/null &&
		openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" \
			-CAkey "$PKI/$ca.key" -CAcreateserial -days 2 \
			-extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
}

make_pki() {
	export PKI=$BATS_FILE_TMPDIR/pki
	mkdir -p "$PKI"
	new_ca ca && new_ca otherca &&
		new_cert good ca 'subjectAltName=DNS:localhost,IP:127.0.0.1' &&
		new_cert named ca 'subjectAltName=DNS:redis.test' &&
		new_cert client ca 'extendedKeyUsage=clientAuth' &&
		openssl pkey -in "$PKI/client.key" -aes256 -passout pass:Enc-Pass-7 \
			-out "$PKI/client-enc.key" 2>/dev/null &&
		echo 'not a certificate' >"$PKI/garbage.pem"
}

# --- servers ------------------------------------------------------------------

# start_tls_redis NAME CERT [redis-server option...]: a server NAME with a
# TLS port (tls_port NAME) presenting CERT, trusting ca for clients; its
# unix socket is plain, for the checks through redis-cli.
start_tls_redis() {
	local name=$1 cert=$2 port attempt
	shift 2
	for ((attempt = 0; attempt < 3; attempt++)); do
		port=$(free_port)
		if start_redis "$name" --tls-port "$port" \
			--tls-cert-file "$PKI/$cert.crt" --tls-key-file "$PKI/$cert.key" \
			--tls-ca-cert-file "$PKI/ca.crt" "$@"; then
			echo "$port" >"$BATS_FILE_TMPDIR/$name.tls-port"
			return 0
		fi
	done
	return 1
}

tls_port() { cat "$BATS_FILE_TMPDIR/$1.tls-port"; }

# tls_url NAME [HOST]: rediss://HOST:PORT of server NAME (HOST 127.0.0.1).
tls_url() { echo "rediss://${2:-127.0.0.1}:$(tls_port "$1")"; }
