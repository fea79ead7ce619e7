#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Redis unavailable (redlock(1), EXIT STATUS: 69), authentication and
# URL details (redlock(1), URLs; passwords never printed), servers that
# vanish (redlock(1), "Running a command under the lock", and EXIT
# STATUS 75).

load helpers

PW='Unavail-Secret-3e9a71'
USER_PW='user-Secret-55b2'
PCT_PW='p@ss:w/rd%x'
PCT_PW_ENC='p%40ss%3Aw%2Frd%25x'

lifecycle main --tcp -- auth --tcp --requirepass "$PW"
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	rcli_at auth ACL SETUSER locker on ">$USER_PW" '~*' '&*' '+@all' >/dev/null
	rcli_at auth ACL SETUSER pct on ">$PCT_PW" '~*' '&*' '+@all' >/dev/null
	use_redis main
}

auth_url() { echo "redis://127.0.0.1:$(redis_port auth)"; }

# The command used against the auth server: proves the lock key is there.
AUTH_CHECK='redis-cli -h 127.0.0.1 -p "$1" --no-auth-warning -a "$2" EXISTS "$REDLOCK_KEY"'

@test "connection refused exits 69 within seconds even when waiting forever" {
	local port t0 t1
	port=$(dead_port)
	t0=$(now_ms)
	run -69 --separate-stderr redlock -u "redis://127.0.0.1:$port" name touch "$BATS_TEST_TMPDIR/ran"
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 10000)" ]
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$output" ''
	assert [ "${#stderr_lines[@]}" -ge 1 ]
	assert_diagnostics
	# The server is named host:port.
	assert_regex "$stderr" "127\.0\.0\.1:$port"
}

@test "connection refused exits 69 with -n, -w and for the verbs too" {
	local url
	url="redis://127.0.0.1:$(dead_port)"
	run -69 redlock -n -u "$url" name true
	run -69 redlock -w 1h -u "$url" name true
	run -69 redlock -E 5 -u "$url" name true
	run -69 redlock acquire -u "$url" name
	run -69 redlock status -u "$url" name
}

@test "a missing unix socket exits 69" {
	local t0 t1
	t0=$(now_ms)
	run -69 --separate-stderr redlock -u "unix://$BATS_TEST_TMPDIR/no-such.sock" name true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -lt "$(scale_ms 10000)" ]
	assert_diagnostics
}

@test "no password for a server that requires one exits 69" {
	run -69 --separate-stderr redlock -u "$(auth_url)" name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_diagnostics
}

@test "a wrong password in the URL exits 69 and is never printed, even with -v" {
	local wrong=wrongpw-Zq81x
	run -69 --separate-stderr redlock -v -u "redis://:$wrong@127.0.0.1:$(redis_port auth)" name true
	assert_diagnostics
	refute_output --partial "$wrong"
	[[ $stderr != *"$wrong"* ]] || fail "password printed: $stderr"
	[[ $stderr != *"$PW"* ]] || fail "password printed: $stderr"
}

@test "a wrong REDLOCK_PASSWORD exits 69 and is never printed, even with -v" {
	local wrong=wrongpw-Yt22k
	REDLOCK_PASSWORD=$wrong run -69 --separate-stderr redlock -v -u "$(auth_url)" name true
	[[ $stderr != *"$wrong"* ]] || fail "password printed: $stderr"
	REDISCLI_AUTH=$wrong run -69 --separate-stderr redlock -v -u "$(auth_url)" name true
	[[ $stderr != *"$wrong"* ]] || fail "password printed: $stderr"
}

@test "a wrong user password in the URL exits 69 and is never printed" {
	local wrong=wrong-user-pw-Kk3
	run -69 --separate-stderr redlock -v -u "redis://locker:$wrong@127.0.0.1:$(redis_port auth)" name true
	[[ $stderr != *"$wrong"* ]] || fail "password printed: $stderr"
}

@test "the password in the URL authenticates and is never printed with -v" {
	local port
	port=$(redis_port auth)
	run -0 --separate-stderr redlock -v -u "redis://:$PW@127.0.0.1:$port" name \
		sh -c "$AUTH_CHECK" sh "$port" "$PW"
	assert_equal "$output" 1
	assert_diagnostics
	[[ $stderr != *"$PW"* ]] || fail "password printed: $stderr"
}

@test "REDLOCK_PASSWORD authenticates and is never printed with -v" {
	local port
	port=$(redis_port auth)
	REDLOCK_PASSWORD=$PW run -0 --separate-stderr redlock -v -u "$(auth_url)" name \
		sh -c "$AUTH_CHECK" sh "$port" "$PW"
	assert_equal "$output" 1
	[[ $stderr != *"$PW"* ]] || fail "password printed: $stderr"
}

@test "REDISCLI_AUTH authenticates" {
	local port
	port=$(redis_port auth)
	REDISCLI_AUTH=$PW run -0 redlock -u "$(auth_url)" name sh -c "$AUTH_CHECK" sh "$port" "$PW"
	assert_output 1
}

@test "REDLOCK_PASSWORD is preferred to REDISCLI_AUTH" {
	REDLOCK_PASSWORD=$PW REDISCLI_AUTH=wrong-one run -0 redlock -u "$(auth_url)" name true
	REDLOCK_PASSWORD=wrong-one REDISCLI_AUTH=$PW run -69 redlock -u "$(auth_url)" name true
}

@test "a password in the URL is preferred to REDLOCK_PASSWORD" {
	REDLOCK_PASSWORD=wrong-one run -0 redlock -u "redis://:$PW@127.0.0.1:$(redis_port auth)" name true
}

@test "user and password in the URL authenticate as that ACL user" {
	run -0 redlock -u "redis://locker:$USER_PW@127.0.0.1:$(redis_port auth)" name printenv REDLOCK_KEY
	assert_output redlock:name
	# The lock was taken by that user on that server.
	run -0 redlock -u "redis://locker:$USER_PW@127.0.0.1:$(redis_port auth)" name \
		sh -c "$AUTH_CHECK" sh "$(redis_port auth)" "$PW"
	assert_output 1
}

@test "a percent-encoded password in the URL is decoded" {
	run -0 redlock -u "redis://pct:$PCT_PW_ENC@127.0.0.1:$(redis_port auth)" name true
}

@test "a password in REDLOCK_URL authenticates" {
	REDLOCK_URL="redis://:$PW@127.0.0.1:$(redis_port auth)" run -0 redlock name true
}

@test "a db number in a redis:// URL is honoured" {
	local port
	port=$(redis_port main)
	run -0 redlock -u "redis://127.0.0.1:$port/3" name sh -c '
		redis-cli -s "$REDIS_SOCK" -n 3 EXISTS "$REDLOCK_KEY"
		redis-cli -s "$REDIS_SOCK" -n 0 EXISTS "$REDLOCK_KEY"'
	assert_equal "$output" $'1\n0'
	# Released in that db too.
	assert_equal "$(rcli -n 3 EXISTS redlock:name)" 0
}

@test "a db number in a unix:// URL is honoured" {
	run -0 redlock -u "unix://$REDIS_SOCK?db=2" name sh -c '
		redis-cli -s "$REDIS_SOCK" -n 2 EXISTS "$REDLOCK_KEY"
		redis-cli -s "$REDIS_SOCK" -n 0 EXISTS "$REDLOCK_KEY"'
	assert_equal "$output" $'1\n0'
}

@test "locks in different dbs are independent" {
	hold_lock h -u "unix://$REDIS_SOCK?db=1" name
	run -0 redlock -n -u "unix://$REDIS_SOCK?db=2" name true
	run -1 redlock -n -u "unix://$REDIS_SOCK?db=1" name true
	release_lock h
}

@test "a TCP URL without a port and db works when the port is given" {
	# redis://host:port with no db is db 0.
	run -0 redlock -u "redis://127.0.0.1:$(redis_port main)" name sh -c '
		redis-cli -s "$REDIS_SOCK" -n 0 EXISTS "$REDLOCK_KEY"'
	assert_output 1
}

# --- servers that go away ---------------------------------------------------

@test "a holder whose server dies stops its command before the key could expire and exits 75" {
	start_redis gone
	hold_lock h -t 2s -u "unix://$(redis_sock gone)" name
	local child t0 t1
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	t0=$(now_ms)
	kill_redis gone
	wait_for_exit "$child" 10
	t1=$(now_ms)
	# The last renewal was sent before the crash, so the key would have
	# expired within the TTL (2 s) of it: the command must be dead by then.
	# (600 ms allowance for this test's own polling on a busy machine.)
	assert [ $((t1 - t0)) -lt "$(scale_ms 2600)" ]
	bg_wait h 20
	assert_equal "$BG_STATUS" 75
}

@test "a holder whose server hangs stops its command before the key could expire and exits 75" {
	start_redis hung
	hold_lock h -t 2s -u "unix://$(redis_sock hung)" name
	local child t0 t1 rpid
	child=$(cat "$BATS_TEST_TMPDIR/h.child")
	rpid=$(redis_pid hung)
	t0=$(now_ms)
	kill -STOP "$rpid"
	wait_for_exit "$child" 10
	t1=$(now_ms)
	kill -CONT "$rpid"
	assert [ $((t1 - t0)) -lt "$(scale_ms 2600)" ]
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	stop_redis hung
}

@test "a holder whose server restarts empty loses the lock and exits 75" {
	start_redis restart
	hold_lock h -t 3s -u "unix://$(redis_sock restart)" name
	stop_redis restart
	start_redis restart
	bg_wait h 20
	assert_equal "$BG_STATUS" 75
	stop_redis restart
}

@test "a waiter whose server dies exits 69 after bounded retries" {
	start_redis gone
	rcli_at gone SET redlock:name foreign-token PX 600000 >/dev/null
	local c0
	c0=$(clients_count gone)
	bg_start w "$RL" -u "unix://$(redis_sock gone)" name touch "$BATS_TEST_TMPDIR/w.got"
	wait_until -t 10 eval '(($(clients_count gone) > c0))'
	kill_redis gone
	bg_wait w 60
	assert_equal "$BG_STATUS" 69
	assert [ ! -e "$BATS_TEST_TMPDIR/w.got" ]
}

@test "a waiter whose server hangs exits 69 after bounded retries" {
	start_redis hung
	rcli_at hung SET redlock:name foreign-token PX 600000 >/dev/null
	local c0 rpid
	c0=$(clients_count hung)
	rpid=$(redis_pid hung)
	bg_start w "$RL" -u "unix://$(redis_sock hung)" name touch "$BATS_TEST_TMPDIR/w.got"
	wait_until -t 10 eval '(($(clients_count hung) > c0))'
	kill -STOP "$rpid"
	bg_wait w 90
	kill -CONT "$rpid"
	assert_equal "$BG_STATUS" 69
	assert [ ! -e "$BATS_TEST_TMPDIR/w.got" ]
	stop_redis hung
}
