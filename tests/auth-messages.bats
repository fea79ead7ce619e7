#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# A server that wants a password (redlock(1), TLS and Passwords): none, or a
# wrong one, is 69 with one line that names the server and says that
# authentication is required or failed - never Redis's "Protocol error:
# unauthenticated multibulk length", never a bare NOAUTH without the
# server, never the password.

load helpers

PW=s3cret-Pw-9
WRONG=wr0ng-Pw-7

lifecycle prot --tcp --requirepass "$PW"
test_setup() {
	P=$(redis_port prot)
	U="redis://127.0.0.1:$P"
	SOCK_URL="unix://$(redis_sock prot)"
	unset REDLOCK_PASSWORD REDISCLI_AUTH
}

# assert_auth_message KIND SERVER: after run --separate-stderr: status 69,
# nothing on stdout, one stderr line `redlock: ` naming SERVER and saying
# that authentication is KIND (required | failed), without the protocol
# error, and without either password.
assert_auth_message() {
	local kind=$1 server=$2
	assert_equal "$status" 69
	assert_output ''
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" '^redlock: '
	[[ $stderr == *"$server"* ]] || fail "the message does not name the server $server: $stderr"
	case $kind in
	required) assert_regex "$stderr" '[Aa]uthentication (is )?required' ;;
	failed) assert_regex "$stderr" '[Aa]uthentication (failed|refused)' ;;
	esac
	[[ $stderr != *'Protocol error'* && $stderr != *multibulk* ]] || fail "protocol error shown: $stderr"
	[[ $stderr != *"$PW"* && $stderr != *"$WRONG"* ]] || fail "a password was printed: $stderr"
}

@test "no password: running a command is 69, 'authentication required', naming the server" {
	run --separate-stderr redlock -u "$U" -n a touch "$BATS_TEST_TMPDIR/ran"
	assert_auth_message required "127.0.0.1:$P"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "no password: a waiter without -w is 69 at once, not a wait" {
	run --separate-stderr timeout 10 "$RL" -u "$U" a true
	assert_auth_message required "127.0.0.1:$P"
}

@test "no password: acquire is 69, 'authentication required', naming the server" {
	run --separate-stderr redlock acquire -u "$U" a
	assert_auth_message required "127.0.0.1:$P"
}

@test "no password: status is 69, 'authentication required', naming the server" {
	run --separate-stderr redlock status -u "$U" a
	assert_auth_message required "127.0.0.1:$P"
}

@test "no password: list is 69, 'authentication required', naming the server" {
	run --separate-stderr redlock list -u "$U"
	assert_auth_message required "127.0.0.1:$P"
}

@test "no password: break is 69, 'authentication required', naming the server" {
	run --separate-stderr redlock break -u "$U" a
	assert_auth_message required "127.0.0.1:$P"
}

@test "no password over the unix socket: 69, naming the socket" {
	run --separate-stderr redlock -u "$SOCK_URL" -n a true
	assert_auth_message required "$(redis_sock prot)"
}

@test "a wrong password in the URL is 69, 'authentication failed', naming the server and not the password" {
	run --separate-stderr redlock -u "redis://:$WRONG@127.0.0.1:$P" -n a true
	assert_auth_message failed "127.0.0.1:$P"
}

@test "a wrong password in REDLOCK_PASSWORD is 69, 'authentication failed', for run and for list" {
	REDLOCK_PASSWORD=$WRONG run --separate-stderr redlock -u "$U" -n a true
	assert_auth_message failed "127.0.0.1:$P"
	REDLOCK_PASSWORD=$WRONG run --separate-stderr redlock list -u "$U"
	assert_auth_message failed "127.0.0.1:$P"
}

@test "the right password works" {
	REDLOCK_PASSWORD=$PW run -0 --separate-stderr redlock -u "$U" -n a true
	run -0 --separate-stderr redlock -u "redis://:$PW@127.0.0.1:$P" -n a true
}
