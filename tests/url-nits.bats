#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# URL details (redlock(1), SYNOPSIS): an unknown query parameter is
# a usage error that names it (not "bad database number"); an IPv6 zone id
# written as RFC 6874 says, `%25` then the zone, is decoded.  A dotted-quad
# address is connected to without the resolver (src/conn.c), every other
# spelling of a host through it, as before.

load helpers

lifecycle main --tcp
test_teardown() {
	stop_ll
}

# assert_names_param URL PARAM: after run --separate-stderr: a usage
# error whose message, the URL itself left out, names PARAM.
assert_names_param() {
	local url=$1 param=$2 msg
	assert_usage_error
	msg=${stderr_lines[0]//"$url"/}
	[[ $msg =~ (^|[^[:alnum:]_])$param([^[:alnum:]_]|$) ]] ||
		fail "the message does not name '$param': ${stderr_lines[0]}"
	[[ $msg != *'database'* ]] || fail "the message is about the database: ${stderr_lines[0]}"
}

@test "redis://h:1234/1?x=y is a usage error that names the parameter x" {
	local url='redis://h:1234/1?x=y'
	run --separate-stderr redlock -u "$url" -n a true
	assert_names_param "$url" x
}

@test "redis://h:1234?x=y is a usage error that names the parameter x" {
	local url='redis://h:1234?x=y'
	run --separate-stderr redlock -u "$url" -n a true
	assert_names_param "$url" x
}

@test "unix:///path?db=1&x=y is a usage error that names the parameter x" {
	local url="unix://$REDIS_SOCK?db=1&x=y"
	run --separate-stderr redlock -u "$url" -n a true
	assert_names_param "$url" x
}

@test "unix:///path?foo=1 is a usage error that names the parameter foo" {
	local url="unix://$REDIS_SOCK?foo=1"
	run --separate-stderr redlock -u "$url" -n a true
	assert_names_param "$url" foo
}

@test "a unix socket path longer than a socket address holds is a usage error, not a connection to its first 107 bytes" {
	local long
	long=$BATS_TEST_TMPDIR/$(printf 'x%.0s' {1..120}).sock
	run -64 --separate-stderr redlock -u "unix://$long" -n a true
	assert_regex "$stderr" "^redlock: invalid URL 'unix://.*': the socket path is longer than the 107 bytes a unix socket's address holds"
}

@test "unix:///path?db=1 is still accepted" {
	run -0 --separate-stderr redlock -u "unix://$REDIS_SOCK?db=1" -n a true
}

@test "every spelling of 127.0.0.1 that the resolver reads reaches the server, and so does localhost" {
	local port h
	port=$(redis_port main)
	for h in 127.0.0.1 127.1 0177.0.0.1 127.000.000.001 2130706433 localhost; do
		run --separate-stderr redlock -u "redis://$h:$port" -n a true
		[[ $status == 0 ]] || fail "redis://$h:$port: status $status: $stderr"
	done
}

@test "a refused dotted-quad address says what the resolver's path said: Connection refused, 69" {
	local port
	port=$(dead_port)
	run --separate-stderr redlock -u "redis://127.0.0.1:$port" -n a true
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock: cannot connect to 127.0.0.1:$port: Connection refused"
}

@test "redis://[fe80::1%25lo]:PORT parses: a connection failure (69), not a usage error or an unresolvable name" {
	local port
	port=$(dead_port)
	run --separate-stderr redlock -u "redis://[fe80::1%25lo]:$port" -n a true
	assert_equal "$status" 69
	[[ $stderr != *'Name or service not known'* && $stderr != *'resolve'* ]] ||
		fail "the zone id was not decoded: $stderr"
	[[ $stderr != *'%25'* ]] || fail "the message shows the zone still encoded: $stderr"
}

# link_local_server: a redis-server on a link-local IPv6 address of this
# machine (any interface that has one), with a password since it is not
# loopback; sets LL_ADDR, LL_IF, LL_PORT, LL_PID.  Skips without one.
link_local_server() {
	local line addr ifname
	while read -r line; do
		read -r addr _ _ scope _ ifname <<<"$line"
		if [[ $scope == 20 && $ifname != lo ]]; then
			LL_ADDR=$(sed -E 's/(....)/\1:/g; s/:$//' <<<"$addr")
			LL_IF=$ifname
			break
		fi
	done </proc/net/if_inet6 2>/dev/null
	[[ -n ${LL_ADDR:-} ]] || skip "no link-local IPv6 address here"
	local dir=$BATS_TEST_TMPDIR/ll i
	mkdir -p "$dir"
	for ((i = 0; i < 5; i++)); do
		LL_PORT=$(free_port)
		redis-server --daemonize yes --port "$LL_PORT" --bind "$LL_ADDR%$LL_IF" \
			--requirepass ll-pw --save '' --appendonly no \
			--dir "$dir" --pidfile "$dir/pid" --logfile "$dir/log" </dev/null >/dev/null 2>&1 3>&-
		if wait_until -t 5 eval '[[ $(REDISCLI_AUTH=ll-pw redis-cli -h "$LL_ADDR%$LL_IF" -p "$LL_PORT" PING 2>/dev/null) == PONG ]]'; then
			LL_PID=$(cat "$dir/pid")
			echo "$LL_PID" >"$BATS_TEST_TMPDIR/ll.pid"
			return 0
		fi
		[[ -f $dir/pid ]] && stop_ll
	done
	skip "could not start a redis-server on $LL_ADDR%$LL_IF"
}

# stop_ll: stops the link-local server this test started.
stop_ll() {
	local f=$BATS_TEST_TMPDIR/ll/pid pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null && kill -TERM "$pid"
	wait_until -t 10 pid_dead "$pid"
	rm -f "$f"
}

@test "redis://[fe80::...%25IF]:PORT reaches a server on that link-local address" {
	link_local_server
	run --separate-stderr redlock -u "redis://:ll-pw@[$LL_ADDR%25$LL_IF]:$LL_PORT" -n a true
	local st=$status err=$stderr
	stop_ll
	[[ $st == 0 ]] || fail "status $st: $err"
}
