#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# A catalogue of bad input (redlock(1), SYNOPSIS; redlock(1), EXIT STATUS: 64): every option with
# malformed, empty, negative, zero and overflowing values, bad NAMEs,
# unknown options, missing and extra operands, bad URLs.  Each must exit
# 64 with exactly one `redlock: ` line and the Try line, print nothing on
# stdout, never echo a password, and send nothing to Redis ("arguments
# are checked completely before any connection is made"): the private
# server's statistics are reset before each case and must show no
# connection and no command afterwards.

load helpers

lifecycle main
test_setup() {
	[[ $(rcli CONFIG RESETSTAT) == OK ]]
}

PW=hunter2

# case_name ARG...: the command line for messages, long words shortened.
case_name() {
	local a out=redlock
	for a in "$@"; do
		((${#a} > 40)) && a="${a:0:20}...(${#a} bytes)"
		out+=" $(printf '%q' "$a")"
	done
	echo "$out"
}

# untouched: since the last CONFIG RESETSTAT, nobody but this query
# connected, no command but its own ran, and the keyspace is empty.
# Resets the statistics again for the next case, from a connection of
# its own, which the reset forgets.  Both are one command each, which
# the suite's own redis-cli serves (tests/tools/rcli.c: there are
# hundreds of cases); the real one reading commands from stdin would
# first send COMMAND DOCS, for its hints.
untouched() {
	local info line cmds='' conns='' dbs='' reset
	info=$(rcli INFO commandstats stats keyspace)
	info=${info//$'\r'/}
	reset=$(rcli CONFIG RESETSTAT)
	[[ $reset == OK ]] || {
		echo "CONFIG RESETSTAT failed: $reset"
		return 1
	}
	while IFS= read -r line; do
		case $line in
		'cmdstat_config|resetstat:'* | cmdstat_info:* | 'cmdstat_command|docs:'*) ;;
		cmdstat_*) cmds+=" ${line%%:*}" ;;
		total_connections_received:*) conns=${line#*:} ;;
		db[0-9]*:*) dbs+=" $line" ;;
		esac
	done <<<"$info"
	if [[ -n $cmds || $conns != 1 ]]; then
		echo "Redis was contacted: connections=$conns, commands:$cmds"
		return 1
	fi
	if [[ -n $dbs ]]; then
		echo "Redis was written to:$dbs"
		return 1
	fi
}

# expect_usage_error ARG...: `redlock ARG...` is a usage error that
# shows no password and leaves Redis untouched.  Untraced (_untraced in
# helpers.bash: there are hundreds of cases), so each failure returns
# by itself; the case's name is made only for a message.
expect_usage_error() { _untraced _expect_usage_error "$@"; }
_expect_usage_error() {
	local why
	run --separate-stderr redlock "$@"
	assert_usage_error || {
		fail "for: $(case_name "$@")"
		return 1
	}
	if [[ $stderr == *"$PW"* || $output == *"$PW"* ]]; then
		fail "the password was shown for: $(case_name "$@")
stderr: $stderr"
		return 1
	fi
	why=$(untouched) || {
		fail "$why for: $(case_name "$@")"
		return 1
	}
}

@test "the no-contact check notices a command that reaches Redis" {
	run untouched
	assert_success
	run -0 redlock name true
	run untouched
	assert_failure
	assert_output --partial 'Redis was contacted'
	# (the fencing counter stays, by design)
	rcli FLUSHALL >/dev/null
	[[ $(rcli CONFIG RESETSTAT) == OK ]]
	run untouched
	assert_success
	# ... a key left behind ...
	rcli SET x 1 >/dev/null
	[[ $(rcli CONFIG RESETSTAT) == OK ]]
	run untouched
	assert_failure
	assert_output --partial 'written to'
	rcli DEL x >/dev/null
	[[ $(rcli CONFIG RESETSTAT) == OK ]]
	run untouched
	assert_success
	# ... and a connection that sends nothing.
	/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.close()' "$REDIS_SOCK"
	run untouched
	assert_failure
}

@test "malformed, empty, negative, zero and overflowing --ttl values are usage errors" {
	local d
	for d in 1e30 '' -1 0 0s 0ms 9ms 0.009s abc 1x 5ss 1d 1sec ' 1' '1 s' '1s ' \
		+5 0x10 1,5 1.5.2 . s ms 2401h 8640000001ms 144001m \
		99999999999999999999999 184467440737095516160 $'5s\n'; do
		expect_usage_error -t "$d" name true
		expect_usage_error "--ttl=$d" name true
		expect_usage_error acquire -t "$d" name
		expect_usage_error extend name tok -t "$d"
	done
}

@test "malformed, empty, negative and overflowing --wait and --timeout values are usage errors" {
	local d o
	for d in -1 '' x 1e30 1d 2401h '1 s' -0 99999999999999999999999; do
		for o in -w --wait --timeout; do
			expect_usage_error "$o" "$d" name true
		done
		expect_usage_error acquire -w "$d" name
	done
}

@test "malformed, empty, negative and overflowing --kill-after values are usage errors" {
	local d
	for d in x '' -1 1e30 2401h 1d '1 s'; do
		expect_usage_error --kill-after "$d" name true
		expect_usage_error "--kill-after=$d" name true
	done
}

@test "a --kill-after that does not fit in the TTL is a usage error" {
	expect_usage_error -t 1s --kill-after 1s name true
	expect_usage_error -t 1s --kill-after 2400h name true
	expect_usage_error --kill-after 30s name true
}

@test "malformed, empty, negative and overflowing --min-hold values are usage errors" {
	local d
	for d in -1 '' x 1e30 2401h '1 s'; do
		expect_usage_error --min-hold "$d" name true
	done
}

@test "zero, malformed, empty, negative and overflowing --max-time values are usage errors" {
	local d
	for d in 0 0s 0ms 0.0 -1 '' x 1e30 2401h '1 s'; do
		expect_usage_error --max-time "$d" name true
		expect_usage_error run --max-time "$d" name true
	done
}

@test "-E values outside 0..255 or not a decimal number are usage errors" {
	local e
	for e in 256 -1 x '' 1.5 1000 ' 1' '1 ' +1 0x10 1e2 -0 \
		2147483648 4294967297 99999999999999999999 $'1\n'; do
		expect_usage_error -E "$e" name true
		expect_usage_error --conflict-exit-code "$e" name true
		expect_usage_error acquire -E "$e" name
		expect_usage_error release name tok -E "$e"
	done
}

@test "--on-lost other than term, kill or ignore is a usage error" {
	local a
	for a in maybe '' TERM Kill 'term ' ' term' termx t k i 0 $'term\nkill'; do
		expect_usage_error --on-lost "$a" name true
		expect_usage_error "--on-lost=$a" name true
	done
}

@test "an empty NAME is a usage error for the run form and every verb" {
	expect_usage_error '' true
	expect_usage_error '' -c true
	expect_usage_error run '' true
	expect_usage_error -c true ''
	expect_usage_error acquire ''
	expect_usage_error release '' tok
	expect_usage_error extend '' tok
	expect_usage_error status ''
	expect_usage_error break ''
}

@test "an empty TOKEN is a usage error" {
	expect_usage_error release name ''
	expect_usage_error extend name ''
}

@test "a NAME longer than 4096 bytes is a usage error for the run form and every verb" {
	local n4097 big
	n4097=$(printf 'n%.0s' {1..4097})
	big=$(head -c 100000 /dev/zero | tr '\0' n)
	local name
	for name in "$n4097" "$big"; do
		expect_usage_error "$name" true
		expect_usage_error run "$name" true
		expect_usage_error acquire "$name"
		expect_usage_error release "$name" tok
		expect_usage_error extend "$name" tok
		expect_usage_error status "$name"
		expect_usage_error break "$name"
	done
}

@test "unknown options are usage errors" {
	expect_usage_error --bogus name true
	expect_usage_error --bogus=1 name true
	expect_usage_error -Z name true
	expect_usage_error -nZ name true
	expect_usage_error --nonblock=1 name true
	expect_usage_error --json=yes status name
	expect_usage_error --- name true
	expect_usage_error --t 5s name true
	expect_usage_error run --bogus name true
	expect_usage_error acquire --bogus name
	expect_usage_error status name --bogus
	expect_usage_error list -Z
	expect_usage_error release name tok -Z
	expect_usage_error $'--bo\ngus' name true
}

@test "an option missing its value is a usage error" {
	local o
	for o in -u --url -t --ttl -w --wait --timeout -E --conflict-exit-code \
		-p --prefix --on-lost --kill-after --min-hold --max-time; do
		expect_usage_error "$o"
		expect_usage_error acquire name "$o"
		expect_usage_error list "$o"
	done
	expect_usage_error -c
	expect_usage_error name -c
	expect_usage_error name --command
	expect_usage_error run name -c
}

@test "a missing NAME, COMMAND or TOKEN is a usage error" {
	expect_usage_error
	expect_usage_error name
	expect_usage_error run
	expect_usage_error run name
	expect_usage_error -n -t 5s
	expect_usage_error -n -- name
	expect_usage_error acquire
	expect_usage_error release
	expect_usage_error release name
	expect_usage_error extend
	expect_usage_error extend name
	expect_usage_error status
	expect_usage_error break
	expect_usage_error -c true
}

@test "extra operands are usage errors" {
	expect_usage_error name -c true extra
	expect_usage_error name --command true extra
	expect_usage_error name --command=true extra
	expect_usage_error -c true name extra
	expect_usage_error acquire name extra
	expect_usage_error release name tok extra
	expect_usage_error release name tok -- extra
	expect_usage_error extend name tok extra
	expect_usage_error status name extra
	expect_usage_error break name extra
	expect_usage_error list 'a*' 'b*'
	expect_usage_error status a b c d e
}

@test "URLs with a bad scheme are usage errors" {
	local u
	for u in '' http://127.0.0.1:6379 https://h rediss:/127.0.0.1:1 \
		ftp://h redis:/h redis:h 'redis//h' 127.0.0.1:6379 localhost \
		unix:/tmp/s.sock unix://relative.sock unix:// redis:// ://h tcp://h:1; do
		expect_usage_error -u "$u" name true
		expect_usage_error "--url=$u" acquire name
	done
}

@test "URLs with a bad port are usage errors" {
	local p
	for p in 0 65536 99999 x '' -1 +1 ' 1' 6379x 0x10 4294967297 99999999999999999999; do
		expect_usage_error -u "redis://127.0.0.1:$p" name true
		expect_usage_error -u "redis://[::1]:$p/0" status name
	done
	expect_usage_error -u 'redis://[::1]x' name true
}

@test "URLs with a bad db are usage errors" {
	local d
	for d in x -1 1/2 ' 1' 1x 0x1 99999999999 '1?x' '1#x'; do
		expect_usage_error -u "redis://127.0.0.1:6379/$d" name true
		expect_usage_error -u "unix://$REDIS_SOCK?db=$d" name true
	done
	expect_usage_error -u "unix://$REDIS_SOCK?db=" name true
	expect_usage_error -u "unix://$REDIS_SOCK?foo=1" name true
	expect_usage_error -u 'redis://127.0.0.1:6379?db=1' name true
	expect_usage_error -u 'redis://127.0.0.1:6379#x' name true
}

@test "URLs with a bad percent-escape or host are usage errors" {
	local u
	for u in 'redis://:%zz@127.0.0.1' 'redis://:p%4@127.0.0.1' 'redis://:p%@127.0.0.1' \
		'redis://:p%00@127.0.0.1' 'redis://u%zz:p@127.0.0.1' 'redis://u%00@127.0.0.1' \
		"unix://$REDIS_SOCK%zz" 'unix:///tmp/%00.sock' 'redis://ho st' \
		'redis://[::1' 'redis://[]:1' 'redis://:6379' 'redis://:p@'; do
		expect_usage_error -u "$u" name true
	done
}

@test "a bad URL after good ones is a usage error that contacts none of them" {
	expect_usage_error -u "unix://$REDIS_SOCK" -u http://x name true
	expect_usage_error -u "unix://$REDIS_SOCK" -u "unix://$REDIS_SOCK" \
		-u 'redis://:hunter2@h:0' acquire name
}

@test "a bad URL in REDLOCK_URL is a usage error" {
	REDLOCK_URL=http://127.0.0.1:1 expect_usage_error name true
	REDLOCK_URL="unix://$REDIS_SOCK,ftp://x" expect_usage_error name true
	REDLOCK_URL="unix://$REDIS_SOCK, redis://h:0" expect_usage_error acquire name
	REDLOCK_URL='redis://:hunter2@host:99999' expect_usage_error name true
}

@test "a password in a bad URL is never echoed" {
	local u
	for u in 'redis://:hunter2@host:99999' 'redis://user:hunter2@host:0' \
		'redis://:hunter2@host/x' 'redis://:hunter2@host:x/1' \
		'redis://:hunter2@[::1' 'redis://:hunter2@' 'redis://:hunter2%zz@host' \
		'redis://:%zzhunter2@host' 'rediss://:hunter2@host:0' 'http://:hunter2@host' \
		'redis://:hunter2@ho st' 'redis://:hunter2@host?x' 'redis://a@b:hunter2@host:0'; do
		expect_usage_error -u "$u" name true
	done
	run -64 --separate-stderr redlock -u 'redis://:hunter2@host:99999' name true
	assert_equal "${stderr_lines[0]}" "redlock: invalid URL 'redis://***@host:99999': bad port"
	# From the environment, the message names the variable.
	REDLOCK_URL='redis://:hunter2@host:99999' run -64 --separate-stderr redlock name true
	assert_equal "${stderr_lines[0]}" "redlock: invalid URL 'redis://***@host:99999' in REDLOCK_URL: bad port"
}

@test "the password from the environment is never echoed in a usage error" {
	REDLOCK_PASSWORD=$PW expect_usage_error -t x name true
	REDLOCK_PASSWORD=$PW expect_usage_error -u redis://h:0 name true
	REDISCLI_AUTH=$PW expect_usage_error --bogus name true
}

# Known bug (see the hardening report): url_redact() looks for the user
# information only before the first '/', '?' or '#', so a password
# holding one of them is printed in full when the URL is rejected.
@test "a password holding '/', '?' or '#' in a bad URL is never echoed" {
	local u
	for u in 'redis://:hunter2/x@host' 'redis://:hun?ter2@host' \
		'redis://:hunter2#@host' 'redis://u:hunter2/@host:0'; do
		expect_usage_error -u "$u" name true
	done
}

# $REDLOCK_URL is split only where a new URL (a scheme) starts, so a
# comma or blank inside a password stays in its URL.
@test "a password holding a comma or blank in REDLOCK_URL is never echoed" {
	REDLOCK_URL='redis://:hunter2,x@host:99999' expect_usage_error name true
	REDLOCK_URL='redis://:hunter2 x@host:99999' expect_usage_error name true
	REDLOCK_URL='redis://:hunter2,x@host:99999, redis://h' expect_usage_error name true
}

@test "a bad value holding a newline still gives exactly one diagnostic line" {
	expect_usage_error -t $'1\n2' name true
	expect_usage_error -u $'redis://h\n:1' name true
	expect_usage_error --on-lost $'a\nb\nc' name true
	expect_usage_error acquire $'a\nb' extra
	expect_usage_error $'--x\ny'
}
