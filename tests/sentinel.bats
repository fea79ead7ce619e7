#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# High availability through Redis Sentinel (HIGH AVAILABILITY in
# redlock-protocol(7)): discovery, every verb through a
# redis+sentinel:// URL, the sentinels' own password, a Sentinel URL in
# a quorum, and the failover guard's record.  The failovers are in
# sentinel-failover.bats, sentinel-staged-loss.bats,
# sentinel-staged-waiters.bats and sentinel-unsynced.bats, which run
# beside this file.
#
# The file's own setup "a" (master, replica, three sentinels) serves
# every test here.

load helpers
load fault_helpers
load sentinel_helpers

SVC=redlock-svc

lifecycle
# shellcheck disable=SC2317 # called by bats
file_setup() {
	sentinel_setup a "$SVC"
	export A_URL=$SENTINEL_URL
	use_redis a-m
}


# A URL whose sentinels nobody listens on.
dead_url() {
	echo "redis+sentinel://127.0.0.1:$(dead_port 1),127.0.0.1:$(dead_port 2)/$1"
}

@test "a Sentinel URL finds the master and the command runs under the lock there" {
	hold_lock h -v -u "$A_URL" job
	assert_regex "$(rcli GET redlock:job)" "$UUID_RE"
	wait_until caught_up a
	assert_equal "$(rcli_at a-r GET redlock:job)" "$(rcli GET redlock:job)"
	run --separate-stderr redlock -u "$A_URL" status job
	assert_success
	assert_line 'state:   held'
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert key_absent redlock:job
	assert_regex "$(bg_err h)" "master $SVC at 127\.0\.0\.1:$(redis_port a-m)"
	refute_regex "$(bg_err h)" 'failed over'
}

@test "acquire, extend, status, list and release work through a Sentinel URL" {
	run --separate-stderr redlock -u "$A_URL" -t 30s acquire deploy
	assert_success
	assert_regex "$output" "$UUID_RE"
	local tok=$output
	run -0 redlock -u "$A_URL" -t 90s extend deploy "$tok"
	assert pttl_above a-m redlock:deploy 60000
	run -0 redlock -u "$A_URL" --json status deploy
	assert_regex "$output" '"held":true'
	# The guard's record is under the prefix but never listed.
	run -0 redlock -u "$A_URL" list
	assert_equal "${#lines[@]}" 1
	assert_regex "${lines[0]}" '^deploy '
	run -0 redlock -u "$A_URL" release deploy "$tok"
	assert key_absent redlock:deploy
	run -1 redlock -u "$A_URL" status deploy
}

@test "break removes a lock through a Sentinel URL" {
	run -0 redlock -u "$A_URL" acquire stuck
	run --separate-stderr redlock -u "$A_URL" break stuck
	assert_success
	assert_regex "$stderr" "removed lock 'stuck'"
	assert key_absent redlock:stuck
	run -1 redlock -u "$A_URL" break stuck
}

@test "an unknown service is 69 with one line" {
	local url=${A_URL%/*}/nosuch
	run --separate-stderr redlock -u "$url" job true
	assert_equal "$status" 69
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "$stderr" "redlock: the sentinels know no master named 'nosuch'"
}

@test "no sentinel answering is 69 within seconds, even waiting forever" {
	local t0
	t0=$(now_ms)
	run --separate-stderr redlock -u "$(dead_url svc)" job true
	assert_equal "$status" 69
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: no sentinel of 'svc' answered: 127\.0\.0\.1:[0-9]+: Connection refused"
	(($(now_ms) - t0 < $(scale_ms 3000)))
	run --separate-stderr redlock -u "$(dead_url svc)" status job
	assert_equal "$status" 69
}

@test "rediss+sentinel:// to plain sentinels is 69, never spoken in plain text" {
	local tls=rediss+sentinel://${A_URL#redis+sentinel://}
	run --separate-stderr redlock -u "$tls" job true
	assert_equal "$status" 69
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: no sentinel of '$SVC' answered: .*not a TLS port"
	run -0 rcli EXISTS redlock:job
	assert_output 0
}

@test "a master the sentinels name but nobody can reach is 69 naming it" {
	local port
	port=$(dead_port)
	start_sentinel a-lone lone "$port" 1
	# A sentinel monitoring a master that is not there still names it.
	run --separate-stderr redlock -u "redis+sentinel://127.0.0.1:$(sentinel_port a-lone)/lone" job true
	stop_redis a-lone
	assert_equal "$status" 69
	assert_equal "$stderr" "redlock: no master of 'lone' reachable: 127.0.0.1:$port: Connection refused"
}

@test "sentinels that want a password get REDLOCK_SENTINEL_PASSWORD, which is never shown nor passed on" {
	start_sentinel a-pw pw-svc "$(redis_port a-m)" 1 'requirepass s3ntinel-pw'
	local url
	url="redis+sentinel://127.0.0.1:$(sentinel_port a-pw)/pw-svc"
	run --separate-stderr redlock -u "$url" job true
	assert_equal "$status" 69
	assert_regex "$stderr" "127\.0\.0\.1:$(sentinel_port a-pw): authentication required \(no password given: see REDLOCK_SENTINEL_PASSWORD\)"
	REDLOCK_SENTINEL_PASSWORD=wrong-pw run --separate-stderr redlock -u "$url" job true
	assert_equal "$status" 69
	assert_regex "$stderr" 'authentication failed'
	refute_regex "$stderr" 'wrong-pw'
	REDLOCK_SENTINEL_PASSWORD=s3ntinel-pw run --separate-stderr redlock -v -u "$url" job env
	stop_redis a-pw
	assert_success
	refute_regex "$output" 'REDLOCK_SENTINEL_PASSWORD|s3ntinel'
	refute_regex "$stderr" 's3ntinel'
	assert_regex "$output" 'REDLOCK_TOKEN='
}

@test "REDLOCK_SENTINEL_USER names the sentinels' ACL user" {
	# redlock-protocol(7)'s rule for the sentinels' user, and no more.
	start_sentinel a-acl acl-svc "$(redis_port a-m)" 1 'requirepass other-pw' \
		'user dave on >dave-pw +sentinel|master +sentinel|get-master-addr-by-name'
	local url
	url="redis+sentinel://127.0.0.1:$(sentinel_port a-acl)/acl-svc"
	REDLOCK_SENTINEL_USER=dave REDLOCK_SENTINEL_PASSWORD=dave-pw run -0 redlock -u "$url" job true
	REDLOCK_SENTINEL_USER=dave REDLOCK_SENTINEL_PASSWORD=other-pw run redlock -u "$url" job true
	stop_redis a-acl
	assert_equal "$status" 69
}

@test "a sentinels' user that may ask only get-master-addr-by-name (an older ACL) still finds the master, without an epoch" {
	start_sentinel a-old old-svc "$(redis_port a-m)" 1 'requirepass other-pw' \
		'user erin on >erin-pw +sentinel|get-master-addr-by-name'
	local url
	url="redis+sentinel://127.0.0.1:$(sentinel_port a-old)/old-svc"
	REDLOCK_SENTINEL_USER=erin REDLOCK_SENTINEL_PASSWORD=erin-pw run --separate-stderr -0 redlock -v -u "$url" oldacl true
	stop_redis a-old
	assert_regex "$stderr" 'gave no configuration epoch of .old-svc. [(]may the user ask SENTINEL MASTER[?][)]'
	assert_regex "$stderr" 'acquired lock'
}

@test "the URL's user information is the master's" {
	rcli ACL SETUSER alice on '>alice-pw' '~*' '&*' '+@all' >/dev/null
	local hosts=${A_URL#redis+sentinel://}
	hold_lock h -u "redis+sentinel://alice:alice-pw@$hosts" job
	run -0 rcli CLIENT LIST
	assert_regex "$output" 'user=alice'
	release_lock h
	assert_equal "$BG_STATUS" 0
	run --separate-stderr redlock -u "redis+sentinel://alice:nope@$hosts" job true
	rcli ACL DELUSER alice >/dev/null
	assert_equal "$status" 69
	assert_regex "$stderr" "127\.0\.0\.1:$(redis_port a-m): authentication failed"
	refute_regex "$stderr" 'nope'
}

@test "REDLOCK_URL keeps a Sentinel URL's host list whole, alone or among other URLs" {
	REDLOCK_URL=$A_URL run -0 redlock job sh -c 'redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY"'
	assert_regex "$output" "$UUID_RE"
	start_redis a-q1
	start_redis a-q2
	REDLOCK_URL="$A_URL,unix://$(redis_sock a-q1),unix://$(redis_sock a-q2)" \
		run -0 redlock job sh -c 'for s in "$REDIS_SOCK" "$1" "$2"; do
			[ "$(redis-cli -s "$s" GET "$REDLOCK_KEY")" = "$REDLOCK_TOKEN" ] && echo T; done' \
		sh "$(redis_sock a-q1)" "$(redis_sock a-q2)"
	stop_redis a-q1
	stop_redis a-q2
	assert_output $'T\nT\nT'
}

@test "a Sentinel URL is one member of a quorum; the same server twice is refused" {
	start_redis a-q1
	start_redis a-q2
	local -a q=(-u "$A_URL" -u "unix://$(redis_sock a-q1)" -u "unix://$(redis_sock a-q2)")
	hold_lock h "${q[@]}" job
	local tok
	tok=$(rcli GET redlock:job)
	assert_regex "$tok" "$UUID_RE"
	assert_equal "$(rcli_at a-q1 GET redlock:job)" "$tok"
	assert_equal "$(rcli_at a-q2 GET redlock:job)" "$tok"
	run -1 redlock "${q[@]}" -n job true
	release_lock h
	assert_equal "$BG_STATUS" 0
	# With one of the plain servers down the Sentinel member still counts.
	stop_redis a-q2
	run -0 redlock "${q[@]}" job true
	stop_redis a-q1
	run -64 --separate-stderr redlock -u "$A_URL" -u "redis://127.0.0.1:$(redis_port a-m)" job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" '^redlock: .*same server'
}

@test "plain URLs pay nothing for the guard; a Sentinel URL's grants keep its record" {
	rcli CONFIG RESETSTAT >/dev/null
	run -0 redlock -u "unix://$REDIS_SOCK" -t 5s job true
	assert no_record a-m
	# (The sentinels send INFO themselves; only the guard uses HMGET.)
	run -0 rcli INFO commandstats
	refute_regex "$output" 'cmdstat_hmget:'
	# A new server (never a replica, no record) is not held back.
	run --separate-stderr redlock -v -u "$A_URL" -t 5s job true
	assert_success
	refute_regex "$stderr" 'failed over'
	assert_equal "$(record a-m replid)" "$(redis_info_field replication master_replid)"
	assert_equal "$(record a-m epoch)" 0
	assert_equal "$(record a-m ttl)" 5000
	run -0 redlock -u "$A_URL" -t 2s job true
	assert_equal "$(record a-m ttl)" 5000
	run -0 redlock -u "$A_URL" -t 9s job true
	assert_equal "$(record a-m ttl)" 9000
	run -0 rcli INFO commandstats
	assert_regex "$output" 'cmdstat_hmget:calls=3,'
	wait_until caught_up a
	assert_equal "$(record a-r ttl)" 9000
}
