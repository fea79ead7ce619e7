#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# High availability through Redis Sentinel (SPEC §9): discovery, every
# verb through a redis+sentinel:// URL, the sentinels' own password, a
# Sentinel URL in a quorum, following a failover, and the failover
# guard: after a failover that lost a lock, a waiter's critical section
# never overlaps the old holder's (the flock(1) oracle of
# fault_helpers.bash decides, not redlock).
#
# The file's own setup "a" (master, replica, three sentinels) serves the
# tests that fail nothing over; a test that fails over builds and stops
# a setup of its own.  The staged-loss tests run REDLOCK_SOAK times
# (default 1; `make soak` runs them 10 times).

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

# record NAME FIELD: a field of the failover guard's record (prefix
# "redlock:") on server NAME; the key holds a NUL byte, so Lua builds it.
record() {
	rcli_at "$1" EVAL "return redis.call('HGET', 'redlock:' .. string.char(0) .. 'failover', ARGV[1])" 0 "$2"
}
no_record() {
	[[ $(rcli_at "$1" EVAL "return redis.call('EXISTS', 'redlock:' .. string.char(0) .. 'failover')" 0) == 0 ]]
}

# pttl_on NAME KEY
pttl_on() { rcli_at "$1" PTTL "$2"; }
pttl_above() { (($(pttl_on "$1" "$2") > $3)); }

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
	assert_regex "$stderr" "127\.0\.0\.1:$(sentinel_port a-pw): authentication required"
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
	assert_regex "$stderr" 'may not be asked SENTINEL MASTER; asking get-master-addr-by-name'
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

@test "a failover while a command holds a replicated lock: the command goes on on the new master and exits 0" {
	sentinel_setup b svc-b
	local url=$SENTINEL_URL p0 tok
	start_guarded h -v -u "$url" -t 12s job
	tok=$(cat "$BATS_TEST_TMPDIR/h.token")
	wait_until caught_up b
	fail_over b svc-b
	assert_equal "$(rcli_at b-r GET redlock:job)" "$tok"
	# The next renewal reaches the new master: the key's TTL goes up.
	p0=$(pttl_on b-r redlock:job)
	wait_until -t 15 pttl_above b-r redlock:job $((p0 + 500))
	assert pid_alive "$(bg_pid h)"
	release_guarded h
	sentinel_teardown b
	assert_equal "$BG_STATUS" 0
	refute_regex "$(bg_err h)" 'lost'
	assert_regex "$(bg_err h)" "master svc-b at 127\.0\.0\.1:$(redis_port b-r)"
}

@test "a waiter rides out a failover and then waits for the guard's hold" {
	sentinel_setup c svc-c
	local url=$SENTINEL_URL
	start_guarded h -u "$url" -t 8s job
	guarded_bg w -v -u "$url" -t 4s job
	wait_until -t 10 _blocked_on c-m
	wait_until caught_up c
	fail_over c svc-c
	release_guarded h
	assert_equal "$BG_STATUS" 0
	# While the guard holds grants back (the prefix's, every NAME), -n
	# says so, as status would, not "held by someone else".
	run --separate-stderr redlock -n -u "$url" -t 4s probe true
	assert_equal "$status" 1
	assert_regex "$stderr" "lock 'probe' is free, held back after a failover \\([0-9.]+ s left\\)"
	assert_gets_lock w 30
	release_guarded w
	sentinel_teardown c
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	assert_no_overlap "$BATS_TEST_TMPDIR/intervals"
}
_blocked_on() { rcli_at "$1" CLIENT LIST | grep -q 'cmd=blpop'; }

# staged_loss G VARIANT: the replica misses the holder's grant (its
# replication cut), the master dies right after the grant, the replica
# is promoted.  The holder must exit 75, and a waiter that asks the new
# master as soon as a sentinel names it must get the lock only after the
# holder's whole command is gone.  Without the guard it would get it at
# once: the holder's first renewal, which finds the key missing, is due
# only ttl/3 = 4 s after the grant, and the failover takes 2 to 3 s.
# VARIANT "record": an earlier grant reached the replica (its record
# names the old master); "first": the lost grant was the master's first
# (the replica has no record, but was a replica).  Further arguments are
# the waiter's options (-s, --limit 1: the guard holds every kind of
# grant back).
staged_loss() {
	local g=$1 variant=$2 url kill_ms d=$BATS_TEST_TMPDIR
	local -a wopts=("${@:3}")
	sentinel_setup "$g" "svc-$g" || return 1
	url=$SENTINEL_URL
	if [[ $variant == record ]]; then
		run -0 redlock -u "$url" -t 12s warmup true
		wait_until caught_up "$g"
		[[ -n $(record "$g-r" replid) ]] || fail "no record on the replica"
	fi
	pause_replication "$g"
	start_guarded h -u "$url" -t 12s job
	assert_equal "$(rcli_at "$g-r" EXISTS redlock:job)" 0
	kill_ms=$(now_ms)
	kill_redis "$g-m"
	promoted "$g" "svc-$g"
	guarded_bg w -v -u "$url" -t 12s -w 40 "${wopts[@]}" job
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	assert_gone_by h $((kill_ms + 12000)) "the end of the lease granted before the failover"
	assert_gets_lock w 40
	(($(start_ms w) >= $(freed_ms h))) ||
		fail "the waiter started at $(start_ms w), before the holder was gone at $(freed_ms h)"
	(($(cat "$d/w.fence") > $(cat "$d/h.fence"))) ||
		fail "fence $(cat "$d/w.fence") after $(cat "$d/h.fence")"
	release_guarded w
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	sentinel_teardown "$g"
	rm -f "$d"/{h,w}.* "$d/intervals"
	oracle_init
}

@test "staged loss after a replicated grant: the holder exits 75 and the waiter never overlaps it" {
	# (not $i: bats's run uses a global i)
	local rep
	for ((rep = 0; rep < ${REDLOCK_SOAK:-1}; rep++)); do
		staged_loss "d$rep" record
	done
}

@test "staged loss of a master's first grant: the holder exits 75 and the waiter never overlaps it" {
	# (not $i: bats's run uses a global i)
	local rep
	for ((rep = 0; rep < ${REDLOCK_SOAK:-1}; rep++)); do
		staged_loss "e$rep" first
	done
}

@test "staged loss: a shared waiter (-s) is held back as an exclusive one is, and its fence does not go back" {
	staged_loss f record -s
}

@test "staged loss: a semaphore waiter (--limit 1) is held back too" {
	staged_loss g first --limit 1
}

# unsynced_loss G VARIANT: the replica never had its first sync (the
# master delays it: sentinel_setup_unsynced), so it has neither the
# holder's lock nor the guard's record when Sentinel promotes it; with
# VARIANT "rejoin" the old master comes back as its replica, which makes
# Redis start the new master's replication history afresh (its
# master_replid2 all zeros, as on a server that never was a replica).
# Either way the failover must hold grants back: a waiter that asks the
# new master once it is found must get the lock only after the holder's
# lease (12 s from its start) could have ended, and after its command is
# gone.
unsynced_loss() {
	local g=$1 variant=$2 url kill_ms d=$BATS_TEST_TMPDIR
	sentinel_setup_unsynced "$g" "svc-$g" || return 1
	url=$SENTINEL_URL
	start_guarded h -u "$url" -t 12s job
	[[ -n $(record "$g-m" replid) ]] || fail "no record on the master"
	assert no_record "$g-r"
	kill_ms=$(now_ms)
	kill_redis "$g-m"
	promoted "$g" "svc-$g"
	if [[ $variant == rejoin ]]; then
		rejoin_unsynced "$g"
		refute_regex "$(redis_info_field replication master_replid2 "$g-r")" '[1-9a-f]'
	fi
	guarded_bg w -v -u "$url" -t 12s -w 40 job
	bg_wait h 30
	assert_equal "$BG_STATUS" 75
	assert_gone_by h $((kill_ms + 12000)) "the end of the lease granted before the failover"
	assert_gets_lock w 40
	(($(start_ms w) >= $(freed_ms h))) ||
		fail "the waiter started at $(start_ms w), before the holder was gone at $(freed_ms h)"
	(($(start_ms w) >= $(start_ms h) + 12000)) ||
		fail "the waiter started at $(start_ms w), before the holder's lease (from $(start_ms h), 12 s) could have ended"
	(($(cat "$d/w.fence") > $(cat "$d/h.fence"))) ||
		fail "fence $(cat "$d/w.fence") after $(cat "$d/h.fence")"
	release_guarded w
	assert_equal "$BG_STATUS" 0
	assert_regex "$(bg_err w)" 'failed over [0-9.]+ s ago: no grants for [0-9.]+ s'
	# The record now holds the sentinels' epoch of the promotion.
	local epoch
	epoch=$(scli "$(sentinel_port "$g-s1")" SENTINEL MASTER "svc-$g" |
		sed -n '/^config-epoch$/{n;p;}')
	((epoch > 0)) || fail "config-epoch '$epoch'"
	assert_equal "$(record "$g-r" epoch)" "$epoch"
	# A record without the epoch, as an older redlock keeps it, counts
	# as epoch 0: held back once more (its TTL made short for the test).
	rcli_at "$g-r" EVAL "local k = 'redlock:' .. string.char(0) .. 'failover'
		redis.call('HDEL', k, 'epoch')
		redis.call('HSET', k, 'ttl', '500')" 0 >/dev/null
	run --separate-stderr redlock -v -u "$url" -t 500ms job true
	assert_success
	assert_regex "$stderr" 'failed over [0-9.]+ s ago: no grants for 0\.[0-9] s'
	assert_equal "$(record "$g-r" epoch)" "$epoch"
	run --separate-stderr redlock -v -u "$url" -t 500ms job true
	refute_regex "$stderr" 'failed over'
	sentinel_teardown "$g"
}

@test "a promoted replica that never had its first sync grants nothing before the old holder's lease could have ended" {
	unsynced_loss u plain
}

@test "a promoted replica that never synced, rejoined by the old master as its replica, still holds grants back" {
	unsynced_loss v rejoin
}
