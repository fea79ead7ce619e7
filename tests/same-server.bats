#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The same server twice (QUORUM in redlock-protocol(7)): the same URL given
# twice is a usage error (64, nothing sent); two URLs that reach the same
# server (the same run id: 127.0.0.1 and localhost, or its unix socket and
# its TCP port) are refused with 64 before anything is written.

load helpers

lifecycle main --tcp -- other --tcp
test_setup() {
	P=$(redis_port main)
	A="redis://127.0.0.1:$P"
	LOCALHOST="redis://localhost:$P"
	SOCK="unix://$(redis_sock main)"
	B="redis://127.0.0.1:$(redis_port other)"
	assert_equal "$(rcli CONFIG RESETSTAT)" OK
	CONNS0=$(redis_info_field stats total_connections_received)
}

# written_commands: the commands the server ran since setup that can
# write or block (what a lock attempt sends).
written_commands() {
	rcli INFO commandstats | tr -d '\r' |
		grep -E '^cmdstat_(eval|evalsha|eval_ro|fcall|set|del|unlink|expire|pexpire|hset|incr|incrby|lpush|rpush|blpop|getdel)[:_]' |
		cut -d: -f1 | tr '\n' ' '
}

# assert_nothing_written: nothing in the keyspace, no writing command ran.
assert_nothing_written() {
	assert_equal "$(rcli DBSIZE)" 0
	assert_equal "$(written_commands)" ''
}

# assert_not_connected: no client connected since setup but this check
# (each redis-cli counts one connection).
assert_not_connected() {
	local now
	now=$(redis_info_field stats total_connections_received)
	# The CONNS0 reading itself, written_commands and DBSIZE come after it.
	assert_equal "$((now - CONNS0))" 1
}

@test "-u A -u A -u A is a usage error and sends nothing to the server" {
	run --separate-stderr redlock -u "$A" -u "$A" -u "$A" -n s true
	assert_usage_error
	assert_not_connected
	assert_nothing_written
}

@test "the same unix socket URL twice is a usage error" {
	run --separate-stderr redlock -u "$SOCK" -u "$SOCK" -n s true
	assert_usage_error
	assert_not_connected
	assert_nothing_written
}

@test "the same URL twice among other servers (-u A -u B -u A) is a usage error" {
	run --separate-stderr redlock -u "$A" -u "$B" -u "$A" -n s true
	assert_usage_error
	assert_nothing_written
	assert_equal "$(rcli_at other DBSIZE)" 0
}

@test "the same URL twice in REDLOCK_URL is a usage error" {
	REDLOCK_URL="$A,$A" run --separate-stderr redlock -n s true
	assert_equal "$status" 64
	assert_nothing_written
}

@test "redis://127.0.0.1:P and redis://localhost:P together (the same run id) are refused with 64 and nothing is written" {
	run --separate-stderr redlock -u "$A" -u "$LOCALHOST" -n s true
	assert_equal "$status" 64
	assert_output ''
	assert_diagnostics
	[[ $stderr != *'no reply needed'* ]] || fail "stderr: $stderr"
	[[ $stderr != *'held by someone else'* ]] || fail "stderr: $stderr"
	assert_nothing_written
}

@test "a server's unix socket and its TCP port together are refused with 64 and nothing is written" {
	run --separate-stderr redlock -u "$SOCK" -u "$A" -u "$B" -n s true
	assert_equal "$status" 64
	assert_diagnostics
	assert_nothing_written
	assert_equal "$(rcli_at other DBSIZE)" 0
}

@test "acquire with the same server under two names is refused with 64 and prints no token" {
	run --separate-stderr redlock acquire -u "$A" -u "$LOCALHOST" -u "$B" s
	assert_equal "$status" 64
	assert_output ''
	assert_nothing_written
	assert_equal "$(rcli_at other DBSIZE)" 0
}

@test "two different servers still make a quorum" {
	run -0 --separate-stderr redlock -u "$A" -u "$B" s sh -c 'echo "$REDLOCK_TOKEN"'
	assert_regex "$output" "$UUID_RE"
}

@test "the same server as redis://127.0.0.1:P, redis://localhost:P and its socket at once is refused with 64 and runs no script" {
	local u p
	u=unix://$(redis_sock main)
	p=$(redis_port main)
	rcli CONFIG RESETSTAT >/dev/null
	run -64 --separate-stderr redlock -u "redis://127.0.0.1:$p" -u "redis://localhost:$p" -u "$u" same true
	assert_output ''
	assert_regex "$stderr" 'same server'
	[[ $(rcli INFO commandstats) != *cmdstat_eval* ]] || fail "a script ran"
	assert key_absent redlock:same
}
