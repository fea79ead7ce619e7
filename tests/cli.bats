#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Command line: --help, --version, usage errors (redlock(1), SYNOPSIS; redlock(1), EXIT STATUS: 64), and
# "arguments are checked completely before any connection is made".

load helpers

lifecycle main

# connections_received: total connections the server accepted so far
# (this query's own connection included).
connections_received() {
	redis_info_field stats total_connections_received
}

# assert_no_contact CMD...: CMD makes no connection to the server at all.
assert_no_contact() {
	local before after
	before=$(connections_received)
	"$@"
	after=$(connections_received)
	# `after` counts its own query, nothing else may have connected.
	assert_equal "$after" "$((before + 1))"
	assert_equal "$(rcli DBSIZE)" 0
}

@test "--help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr redlock --help
	assert_equal "$stderr" ''
	assert_line --index 0 'Usage: redlock [OPTIONS] NAME COMMAND [ARG...]'
	assert_line --partial 'redlock [OPTIONS] NAME -c SHELL-COMMAND'
	assert_line --partial 'redlock run [OPTIONS] NAME COMMAND [ARG...]'
	assert_line --partial 'redlock acquire [OPTIONS] NAME'
	assert_line --partial 'redlock release [OPTIONS] NAME TOKEN'
	assert_line --partial 'redlock extend [OPTIONS] NAME TOKEN'
	assert_line --partial 'redlock status [OPTIONS] NAME'
	assert_line --partial 'redlock list [OPTIONS] [PATTERN]'
	assert_line --partial 'redlock break [OPTIONS] NAME'
}

@test "--help mentions every option of the contract" {
	run -0 redlock --help
	local opt
	for opt in --url --ttl --nonblock --wait --timeout --conflict-exit-code \
		--command --prefix --on-lost --kill-after --min-hold --max-time \
		--verbose --quiet --json --env --help --version; do
		assert_output --partial -- "$opt"
	done
}

@test "an option on a form that does not take it is a usage error that names the forms that do; its variable is left alone" {
	run -64 --separate-stderr redlock --json name true
	assert_regex "$stderr" "^redlock: --json is for status, list and runs, not for 'run'"
	run -64 --separate-stderr redlock --env release name tok
	assert_regex "$stderr" "^redlock: --env is for acquire, not for 'release'"
	run -64 --separate-stderr redlock --prom status name
	assert_regex "$stderr" "^redlock: --prom is for runs, not for 'status'"
	run -64 --separate-stderr redlock --fence stop name
	assert_regex "$stderr" "^redlock: --fence is for break, not for 'stop'"
	# The options about a command, and those about taking the lock.
	run -64 --separate-stderr redlock acquire --max-time 1s name
	assert_regex "$stderr" "^redlock: --max-time is for the run form, not for 'acquire'"
	run -64 --separate-stderr redlock acquire --min-hold 1s name
	run -64 --separate-stderr redlock stop --kill-after 1s name
	run -64 --separate-stderr redlock status --fair name
	assert_regex "$stderr" "^redlock: --fair is for the run form and acquire, not for 'status'"
	run -64 --separate-stderr redlock break --lock-delay 1s name
	assert_regex "$stderr" "^redlock: --lock-delay is for the run form, acquire and extend, not for 'break'"
	# Their variables are left alone where they do not apply, also in
	# the checks of one option against another (--skip-alert needs
	# --record, --once-per an exclusive lock).
	REDLOCK_MAX_TIME=1s REDLOCK_FAIR=1 run -1 redlock status name
	REDLOCK_SKIP_ALERT=3 REDLOCK_RESPAWN=1 REDLOCK_ONCE_PER=1d run -1 redlock status name
	REDLOCK_SKIP_ALERT=3 run -0 redlock list
	REDLOCK_ONCE_PER=1d run -0 redlock acquire -s -t 5s name
	REDLOCK_LOCK_DELAY=1s REDLOCK_REPLACE=1 run -0 redlock release name "$output"
	# Bad values too: a variable a form does not take is not read.
	REDLOCK_RESPAWN=maybe REDLOCK_STORE_ARGS=maybe run -0 redlock acquire \
	    -t 5s name
	local tok=$output
	REDLOCK_RECORD=maybe REDLOCK_FAIR=maybe REDLOCK_REPLACE=maybe \
	    run -0 redlock status name
	REDLOCK_RECORD=maybe run -0 redlock release name "$tok"
	REDLOCK_RECORD=maybe run -64 --separate-stderr redlock name true
	assert_regex "$stderr" "^redlock: invalid value for REDLOCK_RECORD: 'maybe'"
}

@test "runs --prom --json is a usage error: two formats at once" {
	run -64 --separate-stderr redlock runs --prom --json
	assert_regex "$stderr" "^redlock: --prom and --json are two formats"
}

@test "-h prints the same help as --help" {
	run -0 redlock --help
	local long=$output
	run -0 redlock -h
	assert_equal "$output" "$long"
}

@test "--version prints one line naming redlock and exits 0" {
	run -0 --separate-stderr redlock --version
	assert_equal "$stderr" ''
	assert_equal "${#lines[@]}" 1
	assert_output --regexp 'redlock.*[0-9]'
}

@test "-V prints the version like --version" {
	run -0 redlock --version
	local long=$output
	run -0 redlock -V
	assert_equal "$output" "$long"
}

@test "an unknown long option is a usage error" {
	run --separate-stderr redlock --no-such-option name true
	assert_usage_error
}

@test "an unknown short option is a usage error" {
	run --separate-stderr redlock -Z name true
	assert_usage_error
}

@test "no arguments at all is a usage error" {
	run --separate-stderr redlock
	assert_usage_error
}

@test "options without a NAME are a usage error" {
	run --separate-stderr redlock -n -t 5s
	assert_usage_error
}

@test "a NAME without a COMMAND is a usage error" {
	run --separate-stderr redlock name
	assert_usage_error
}

@test "the run verb without a COMMAND is a usage error" {
	run --separate-stderr redlock run name
	assert_usage_error
	run --separate-stderr redlock run
	assert_usage_error
}

@test "an option missing its argument is a usage error" {
	run --separate-stderr redlock -t
	assert_usage_error
	run --separate-stderr redlock --url
	assert_usage_error
}

@test "-c without its STRING is a usage error" {
	run --separate-stderr redlock name -c
	assert_usage_error
}

@test "-c STRING followed by more arguments is a usage error" {
	run --separate-stderr redlock name -c 'true' extra
	assert_usage_error
}

@test "bad DURATIONs for --ttl are usage errors" {
	local d
	for d in '' abc -1 1x 1e3 ' 1' '1 s' s ms 5ss 10d +5 0x10 1,5 1.5.2 0 0s 5ms 2401h; do
		run --separate-stderr redlock -t "$d" name true
		assert_usage_error || fail "-t '$d' was accepted"
	done
}

@test "bad DURATIONs for the other duration options are usage errors" {
	local opt d
	for opt in -w --wait --timeout --kill-after --min-hold --max-time; do
		for d in '' abc -1 1x 1e3 2401h; do
			run --separate-stderr redlock "$opt" "$d" name true
			assert_usage_error || fail "$opt '$d' was accepted"
		done
	done
}

@test "good DURATIONs are accepted" {
	local d
	for d in 250ms 1.5s 10m 1h 2 0.5 2400h; do
		run -0 --separate-stderr redlock -t "$d" name true
	done
	for d in 0 0s 250ms 1.5s 3; do
		run -0 --separate-stderr redlock -w "$d" name true
	done
	run -0 redlock --min-hold 0 --kill-after 0 --max-time 1h name true
}

@test "a --kill-after that leaves no room for renewals is a usage error" {
	# man page: the grace must be shorter than two thirds of the TTL.
	run --separate-stderr redlock -t 1s --kill-after 1s name true
	assert_usage_error
	run --separate-stderr redlock --kill-after 30s name true
	assert_usage_error
	run -0 redlock -t 3s --kill-after 500ms name true
}

@test "-E outside 0..255 or not a number is a usage error" {
	local e
	for e in 256 -1 x '' 1.5 1000; do
		run --separate-stderr redlock -E "$e" name true
		assert_usage_error || fail "-E '$e' was accepted"
	done
}

@test "-E 0 and -E 255 are accepted" {
	run -0 redlock -E 0 name true
	run -0 redlock -E 255 name true
	run -0 redlock --conflict-exit-code 7 name true
}

@test "an unknown --on-lost action is a usage error" {
	run --separate-stderr redlock --on-lost explode name true
	assert_usage_error
	run -0 redlock --on-lost term name true
	run -0 redlock --on-lost kill name true
	run -0 redlock --on-lost ignore name true
}

@test "bad URLs are usage errors" {
	local u
	for u in '' http://127.0.0.1:6379 rediss:/127.0.0.1:1 127.0.0.1:6379 \
		localhost redis:// redis://127.0.0.1:0 redis://127.0.0.1:65536 \
		redis://127.0.0.1:port redis://127.0.0.1:6379/x redis://127.0.0.1:6379/-1 \
		'redis://:%zz@127.0.0.1:6379' unix:// 'unix:///tmp/x.sock?db=x'; do
		run --separate-stderr redlock -u "$u" name true
		assert_usage_error || fail "-u '$u' was accepted"
	done
}

@test "a bad URL in REDLOCK_URL is a usage error" {
	REDLOCK_URL=http://127.0.0.1:1 run --separate-stderr redlock name true
	assert_usage_error
	REDLOCK_URL="unix://$REDIS_SOCK,ftp://x" run --separate-stderr redlock name true
	assert_usage_error
}

@test "an empty NAME is a usage error" {
	run --separate-stderr redlock '' true
	assert_usage_error
	run --separate-stderr redlock run '' true
	assert_usage_error
	run --separate-stderr redlock acquire ''
	assert_usage_error
}

@test "a 4096-byte NAME is accepted and a 4097-byte NAME is a usage error" {
	local n4096 n4097
	n4096=$(printf 'n%.0s' {1..4096})
	n4097=${n4096}x
	run -0 redlock "$n4096" true
	run --separate-stderr redlock "$n4097" true
	assert_usage_error
}

@test "a 100,000-byte NAME is a usage error" {
	local big
	big=$(head -c 100000 /dev/zero | tr '\0' n)
	run --separate-stderr redlock "$big" true
	assert_usage_error
}

@test "verbs missing their NAME or TOKEN are usage errors" {
	run --separate-stderr redlock acquire
	assert_usage_error
	run --separate-stderr redlock release name
	assert_usage_error
	run --separate-stderr redlock extend name
	assert_usage_error
	run --separate-stderr redlock status
	assert_usage_error
	run --separate-stderr redlock break
	assert_usage_error
}

@test "-q does not silence usage errors" {
	run --separate-stderr redlock -q -t bogus name true
	assert_usage_error
}

@test "a usage error does not run the COMMAND" {
	run --separate-stderr redlock -t bogus name touch "$BATS_TEST_TMPDIR/ran"
	assert_usage_error
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a usage error makes no connection to Redis" {
	# The server is reachable through REDLOCK_URL (and -u), so a binary
	# that connected before checking everything would show up here.
	assert_no_contact run -64 redlock -t bogus name true
	assert_no_contact run -64 redlock -E 300 name true
	assert_no_contact run -64 redlock --no-such-option name true
	assert_no_contact run -64 redlock name
	assert_no_contact run -64 redlock '' true
	assert_no_contact run -64 redlock --on-lost explode name true
	assert_no_contact run -64 redlock -u "unix://$REDIS_SOCK" -u http://x name true
	assert_no_contact run -64 redlock -u "unix://$REDIS_SOCK" name -c true extra
	assert_no_contact run -64 redlock acquire -t bogus name
	assert_no_contact run -64 redlock release name
	assert_no_contact run -64 redlock -u "unix://$REDIS_SOCK" --max-time x name true
}

@test "a valid invocation does contact Redis (the no-contact check can fail)" {
	local before after
	before=$(connections_received)
	run -0 redlock name true
	after=$(connections_received)
	assert [ "$after" -gt "$((before + 1))" ]
}
