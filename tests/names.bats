#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# NAME is any non-empty byte string, used byte for byte (redlock(1), SYNOPSIS): the key
# is exactly prefix + NAME.

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	# check_key NAME PREFIX, run as redlock's command: the environment and
	# the key in Redis are exactly the bytes given.
	export CHECK_KEY=$BATS_FILE_TMPDIR/check_key.py
	cat >"$CHECK_KEY" <<'EOF'
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["REDIS_SOCK"])
name, prefix = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
key = prefix + name
env = os.environb
token = env.get(b"REDLOCK_TOKEN")
errs = []
if env.get(b"REDLOCK_NAME") != name:
    errs.append("REDLOCK_NAME=%r" % env.get(b"REDLOCK_NAME"))
if env.get(b"REDLOCK_KEY") != key:
    errs.append("REDLOCK_KEY=%r" % env.get(b"REDLOCK_KEY"))
if token is None or r.get(key) != token:
    errs.append("GET %r = %r, token %r" % (key, r.get(key), token))
if r.pttl(key) <= 0:
    errs.append("PTTL %r = %r" % (key, r.pttl(key)))
# The token is stored under this key and no other.
for k in r.scan_iter(count=1000):
    if k != key and r.type(k) == b"string" and r.get(k) == token:
        errs.append("token also under %r" % k)
print("; ".join(errs) if errs else "ok")
sys.exit(1 if errs else 0)
EOF
}

# assert_exact_key NAME [PREFIX]: redlock NAME stores exactly PREFIX+NAME
# while its command runs and removes it afterwards.
assert_exact_key() {
	local name=$1 prefix=${2-redlock:}
	if [[ $# -ge 2 ]]; then
		run -0 redlock -p "$prefix" "$name" /usr/bin/python3 "$CHECK_KEY" "$name" "$prefix"
	else
		run -0 redlock "$name" /usr/bin/python3 "$CHECK_KEY" "$name" "$prefix"
	fi
	assert_output ok
	assert_equal "$(rcli EXISTS "$prefix$name")" 0
}

@test "a NAME with spaces is stored byte for byte" {
	assert_exact_key 'nightly report job'
	assert_exact_key ' leading and trailing '
}

@test "a NAME with CR, LF and tab is stored byte for byte" {
	assert_exact_key $'line1\r\nline2\nend\ttab'
}

@test "a NAME with printf directives is stored byte for byte" {
	assert_exact_key '%n%s%x%d%%%p'
}

@test "a NAME with a {hash tag} is stored byte for byte" {
	assert_exact_key '{tag}'
	assert_exact_key 'a{b}c'
	assert_exact_key '{}'
	assert_exact_key '}{'
}

@test "a UTF-8 NAME is stored byte for byte" {
	assert_exact_key 'ünïcødé-名前-🔒'
}

@test "a NAME that is not valid UTF-8 is stored byte for byte" {
	assert_exact_key $'\xff\xfe\x80-bytes'
}

@test "a NAME with glob and shell metacharacters is stored byte for byte" {
	assert_exact_key 'star*and?glob[x]'
	assert_exact_key $'quote\'s "double" `back` $(x) \\ ;|&'
	assert_exact_key 'colon:slash/dot.'
}

@test "a one-byte NAME works" {
	assert_exact_key x
}

@test "a 1,000-byte NAME works" {
	local name
	# 100 x 10 bytes: a b { c } space % n and a 2-byte UTF-8 letter.
	name=$(printf 'ab{c} %%n\xc3\xa9%.0s' {1..100})
	assert_equal "$(printf %s "$name" | wc -c)" 1000
	assert_exact_key "$name"
}

@test "odd bytes in the prefix are used byte for byte too" {
	assert_exact_key name $'p\r\n{x}:'
	assert_exact_key $'odd\nname' ''
}

@test "with an empty prefix, a NAME that is all one hash tag is a usage error: its auxiliary keys would be another NAME's" {
	# '{deploy}' would keep its fencing counter, record and queues where
	# 'deploy' keeps them (redlock-protocol(7)).
	run -64 --separate-stderr redlock -p '' '{deploy}' true
	assert_regex "$stderr" "^redlock: the key '\{deploy\}' would share the auxiliary keys of another lock"
	run -64 redlock -p '' acquire '{deploy}'
	assert_equal "$(rcli DBSIZE)" 0
	run -0 redlock -p '' deploy true
	run -0 redlock -p '' '{deploy}:x' true
	run -0 redlock '{deploy}' true
}

@test "names that differ by one byte are different locks" {
	hold_lock h a
	run -0 redlock -n 'a ' true
	run -0 redlock -n A true
	run -0 redlock -n $'a\n' true
	run -1 redlock -n a true
	release_lock h
}

@test "an odd NAME held by one redlock excludes another" {
	local name=$'%n {x}\r\nü'
	hold_lock h "$name"
	assert_equal "$(rcli EXISTS "redlock:$name")" 1
	run -1 redlock -n "$name" true
	release_lock h
	assert_equal "$BG_STATUS" 0
	assert_equal "$(rcli EXISTS "redlock:$name")" 0
}

@test "printf directives in NAME do not reach a format string, even with -v" {
	run -0 redlock -v '%n%n%n%n%s%s%s' true
	hold_lock h '%n%s%n%s'
	run -1 redlock -v -n '%n%s%n%s' true
	release_lock h
}

@test "a NAME beginning with a dash works after --" {
	# man page: an argument '--' ends the options.
	run -0 redlock -- -dash-name printenv REDLOCK_KEY
	assert_output 'redlock:-dash-name'
	run -0 redlock run -- -dash-name printenv REDLOCK_NAME
	assert_output '-dash-name'
}
