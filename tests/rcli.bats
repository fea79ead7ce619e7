#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The suite's redis-cli (tests/tools/rcli.c, first on the tests' PATH:
# see _use_rcli in tests/helpers.bash) against the real one: for every
# kind of reply, option and failure that the tests use, the same bytes
# on stdout and on stderr, the same exit status, and the same
# connections and commands seen by the server.

load helpers

PW=Rcli-Pw-7
lifecycle main --tcp -- auth --tcp --requirepass "$PW"
file_setup() {
	export SHIM=$REPO_DIR/tests/tools/rcli
	export REAL=${REDLOCK_TEST_REDIS_CLI:-}
	rcli_at auth ACL SETUSER locker on '>Locker-Pw-8' '~*' '&*' '+@all' >/dev/null
}
test_setup() {
	[[ -x $SHIM ]] || skip "tests/tools/rcli is not built (make tests/tools/rcli)"
	[[ -x $REAL && ! $REAL -ef $SHIM ]] || fail "no real redis-cli: '$REAL'"
	unset REDISCLI_AUTH
	SOCK=$(redis_sock main)
	PORT=$(redis_port main)
	APORT=$(redis_port auth)
}

# server_view NAME: what server NAME saw since its last CONFIG RESETSTAT:
# the connections and, per command, its calls, rejected and failed
# calls (not its times), one line each.
server_view() {
	rcli_at "$1" INFO all | tr -d '\r' | sed -n -E \
		-e 's/^(total_connections_received:.*)/\1/p' \
		-e 's/^(cmdstat_[^:]*):calls=([0-9]+),.*rejected_calls=([0-9]+),failed_calls=([0-9]+).*/\1 \2 \3 \4/p'
}

# same_as_real NAME|- ARG...: runs the real redis-cli and the shim with
# ARG... (stdin from $RCLI_STDIN, default /dev/null; stdout and stderr
# to files, as the tests capture them) and fails unless both print the
# same bytes on each and exit with the same status, and (unless NAME is
# -) server NAME saw the same connections and commands from each.
same_as_real() {
	local name=$1 d=$BATS_TEST_TMPDIR w st
	shift
	for w in real shim; do
		[[ $name == - ]] || assert_equal "$(rcli_at "$name" CONFIG RESETSTAT)" OK
		st=0
		if [[ $w == real ]]; then
			"$REAL" "$@" <"${RCLI_STDIN:-/dev/null}" >"$d/$w.out" 2>"$d/$w.err" || st=$?
		else
			"$SHIM" "$@" <"${RCLI_STDIN:-/dev/null}" >"$d/$w.out" 2>"$d/$w.err" || st=$?
		fi
		echo "$st" >"$d/$w.status"
		[[ $name == - ]] || server_view "$name" >"$d/$w.view"
	done
	for w in out err status view; do
		[[ -e $d/real.$w ]] || continue
		cmp -s "$d/real.$w" "$d/shim.$w" ||
			fail "redis-cli $* differs in its $w:
real: $(od -c "$d/real.$w" | head -20)
shim: $(od -c "$d/shim.$w" | head -20)"
	done
	rm -f "$d"/real.* "$d"/shim.*
}

@test "status, integer, nil and string replies are the real redis-cli's" {
	same_as_real main -s "$SOCK" PING
	same_as_real main -s "$SOCK" SET k v
	same_as_real main -s "$SOCK" GET k
	same_as_real main -s "$SOCK" GET nokey
	same_as_real main -s "$SOCK" EXISTS k nokey
	same_as_real main -s "$SOCK" EVAL 'return -42' 0
	same_as_real main -s "$SOCK" SET empty ''
	same_as_real main -s "$SOCK" GET empty
	same_as_real main -s "$SOCK" --raw GET k
}

@test "error replies are the real redis-cli's: on stdout, status 0" {
	rcli RPUSH l a >/dev/null
	same_as_real main -s "$SOCK" NOSUCHCOMMAND a b
	same_as_real main -s "$SOCK" SET
	same_as_real main -s "$SOCK" GET l
	same_as_real main -s "$SOCK" EVAL "return {err='custom failure'}" 0
	same_as_real main -s "$SOCK" EVAL 'return redis.error_reply("MINE line")' 0
	same_as_real main -s "$SOCK" EVAL 'syntax error here' 0
}

@test "bulk strings with newlines, CRs and binary bytes are the real redis-cli's" {
	same_as_real main -s "$SOCK" EVAL "return 'a\\0b\\255\\r\\nc\\n\\n'" 0
	same_as_real main -s "$SOCK" SET 'key with
newline' $'val\r\nue'
	same_as_real main -s "$SOCK" GET 'key with
newline'
	rcli SET big "$(printf '%*s' 100000 '' | tr ' ' x)" >/dev/null
	same_as_real main -s "$SOCK" GET big
}

@test "arrays, nested, empty and holding nils, are the real redis-cli's" {
	rcli HSET h f1 v1 f2 '' >/dev/null
	same_as_real main -s "$SOCK" EVAL "return {1,{2,'x',{}},{},false,'y'}" 0
	same_as_real main -s "$SOCK" EVAL "return {{}}" 0
	same_as_real main -s "$SOCK" EVAL "return {{1},{{'a'}}}" 0
	same_as_real main -s "$SOCK" LRANGE nolist 0 -1
	same_as_real main -s "$SOCK" HGETALL h
	same_as_real main -s "$SOCK" MGET h nokey
	same_as_real main -s "$SOCK" CONFIG GET maxmemory-policy
}

@test "-n selects the database as the real redis-cli does, a bad one included" {
	same_as_real main -s "$SOCK" -n 3 SET k three
	same_as_real main -s "$SOCK" -n 3 GET k
	same_as_real main -s "$SOCK" -n 0 GET k
	same_as_real main -s "$SOCK" -n 99 PING
	same_as_real main -n 3 -s "$SOCK" GET k
}

@test "-h and -p reach the server over TCP as the real redis-cli does" {
	same_as_real main -h 127.0.0.1 -p "$PORT" PING
	same_as_real main -p "$PORT" EXISTS k
	same_as_real main -p "$PORT" -h 127.0.0.1 -n 2 GET k
	same_as_real main -h localhost -p "$PORT" PING
}

@test "a server that is not there: the real redis-cli's message and status" {
	local dead
	dead=$(dead_port)
	same_as_real - -s "$BATS_TEST_TMPDIR/no-such.sock" PING
	same_as_real - -p "$dead" PING
	same_as_real - -h 127.0.0.1 -p "$dead" GET k
}

@test "passwords: -a, --pass, --user, REDISCLI_AUTH, right and wrong, as the real redis-cli" {
	same_as_real auth -p "$APORT" PING
	same_as_real auth -p "$APORT" -a "$PW" PING
	same_as_real auth -p "$APORT" --no-auth-warning -a "$PW" PING
	same_as_real auth -p "$APORT" -a wrong-pw PING
	same_as_real auth -p "$APORT" -a wrong-pw --no-auth-warning -n 2 PING
	same_as_real auth -p "$APORT" --pass "$PW" -n 2 PING
	same_as_real auth -p "$APORT" --user locker --pass Locker-Pw-8 PING
	same_as_real auth -p "$APORT" --user locker -a wrong-pw PING
	same_as_real auth -p "$APORT" --user locker PING
	REDISCLI_AUTH=$PW same_as_real auth -p "$APORT" PING
	REDISCLI_AUTH=wrong-pw same_as_real auth -p "$APORT" PING
	REDISCLI_AUTH=wrong-pw same_as_real auth -p "$APORT" -a "$PW" PING
	same_as_real auth -s "$(redis_sock auth)" -a "$PW" GET k
}

@test "the forms the shim does not handle are the real redis-cli's own" {
	rcli SET k1 v >/dev/null
	same_as_real main -s "$SOCK" --scan
	same_as_real main -s "$SOCK" -r 2 PING
	same_as_real main -s "$SOCK" --no-raw GET k1
	same_as_real main -s "$SOCK" SELECT 2
	printf 'GET k1\nPING\n' >"$BATS_TEST_TMPDIR/stdin"
	RCLI_STDIN=$BATS_TEST_TMPDIR/stdin same_as_real main -s "$SOCK"
	printf 'piped' >"$BATS_TEST_TMPDIR/stdin"
	RCLI_STDIN=$BATS_TEST_TMPDIR/stdin same_as_real main -s "$SOCK" -x SET k2
	same_as_real main -s "$SOCK" GET k2
	same_as_real - -s "$SOCK" -p
}

@test "the shim never runs itself as the real redis-cli" {
	local bin=$BATS_TEST_TMPDIR/bin
	mkdir -p "$bin"
	ln -s "$SHIM" "$bin/redis-cli"
	rcli SET k1 v >/dev/null
	# Named as the real one, and first on PATH: it skips itself.
	run -0 env REDLOCK_TEST_REDIS_CLI="$bin/redis-cli" PATH="$bin:$PATH" \
		timeout 10 "$bin/redis-cli" -s "$SOCK" --scan
	assert_output k1
	# No other redis-cli on PATH: it says so and fails, at once.
	run -127 --separate-stderr env -u REDLOCK_TEST_REDIS_CLI PATH="$bin" "$(command -v timeout)" 10 \
		"$bin/redis-cli" -s "$SOCK" --scan
	assert_equal "$stderr" "rcli: no real redis-cli on PATH"
}
