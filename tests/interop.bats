#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Interoperability with redis-py's Lock (redlock(1): same key layout; with
# --prefix '' the key is the bare NAME, as redis-py uses it).

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	export PY_PRELUDE='
import os, sys, redis
from redis.exceptions import LockError
r = redis.Redis(unix_socket_path=os.environ["REDIS_SOCK"])
'
}

# py CODE [ARG...]: run CODE under /usr/bin/python3 with a redis-py client `r`.
py() {
	local code=$1
	shift
	/usr/bin/python3 -c "$PY_PRELUDE$code" "$@"
}

# py_hold NAME TTL-SECONDS: take NAME with redis-py, print the token.
py_hold() {
	py '
l = r.lock(sys.argv[1], timeout=float(sys.argv[2]))
assert l.acquire(blocking=False), "redis-py could not take the lock"
print(l.local.token.decode())' "$1" "$2"
}

# py_release NAME TOKEN: release through redis-py as the owner of TOKEN.
py_release() {
	py '
l = r.lock(sys.argv[1])
l.local.token = sys.argv[2].encode()
l.release()' "$1" "$2"
}

@test "a lock held by redis-py makes redlock -n exit 1" {
	local tok
	tok=$(py_hold name 60)
	run -1 redlock -p '' -n name touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# redlock left redis-py's lock alone.
	assert_equal "$(rcli GET name)" "$tok"
	py_release name "$tok"
	run -0 redlock -p '' -n name true
}

@test "a lock held by redlock makes redis-py's non-blocking acquire return False" {
	run -0 redlock -p '' name /usr/bin/python3 -c "$PY_PRELUDE
print(r.lock('name').acquire(blocking=False))"
	assert_output False
	run -0 py 'print(r.lock("name", timeout=5).acquire(blocking=False))'
	assert_output True
}

@test "redis-py sees redlock's token as the owner of the lock" {
	run -0 redlock -p '' name /usr/bin/python3 -c "$PY_PRELUDE
l = r.lock('name')
l.local.token = os.environ['REDLOCK_TOKEN'].encode()
print(l.locked(), l.owned(), r.get('name').decode() == os.environ['REDLOCK_TOKEN'])"
	assert_output 'True True True'
}

@test "redis-py cannot release redlock's lock with another token" {
	hold_lock h -p '' name
	local token
	token=$(rcli GET name)
	run -0 py '
l = r.lock("name")
l.local.token = b"not-the-owner"
try:
    l.release()
    print("released")
except LockError:
    print("refused")'
	assert_output refused
	assert_equal "$(rcli GET name)" "$token"
	release_lock h
	assert_equal "$BG_STATUS" 0
}

@test "a redlock waiter gets the lock when redis-py releases it" {
	local tok
	tok=$(py_hold name 60)
	bg_start w "$RL" -p '' name touch "$BATS_TEST_TMPDIR/w.got"
	assert stays_false -t 1 test -e "$BATS_TEST_TMPDIR/w.got"
	py_release name "$tok"
	wait_for_file "$BATS_TEST_TMPDIR/w.got" 15
	bg_wait w 10
	assert_equal "$BG_STATUS" 0
}

@test "a redlock waiter gets the lock when redis-py's lock times out" {
	py_hold name 1.5 >/dev/null
	run -0 redlock -p '' -w 15s name true
}

@test "a lock taken with redlock acquire can be released by redis-py" {
	run -0 --separate-stderr redlock acquire -p '' -t 1m name
	local tok=$output
	assert_regex "$tok" "$UUID_RE"
	py_release name "$tok"
	assert key_absent name
}

@test "a lock taken by redis-py cannot be released by redlock with another token" {
	local tok
	tok=$(py_hold name 60)
	run -1 redlock release -p '' name 00000000-0000-4000-8000-000000000000
	assert_equal "$(rcli GET name)" "$tok"
	run -0 redlock release -p '' name "$tok"
	assert key_absent name
}
