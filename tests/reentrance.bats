#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Re-entrance (redlock(1), "Running a command under the lock"): `redlock NAME ...` inside a command that already
# holds NAME on the same server runs its command under the inherited lock
# and leaves the release to the outer one.

load helpers

lifecycle main -- second

# bounded RL-ARGS...: redlock under timeout(1), so a deadlock fails the
# test (status 124) instead of hanging the suite.
bounded() {
	timeout -k 5 "$(($(scale_ms 30000) / 1000))" "$RL" "$@"
}

@test "redlock NAME inside a command holding NAME runs its command without deadlock" {
	run -0 bounded -t 10s name sh -c 'redlock name sh -c "echo inner"; echo "outer $?"'
	assert_equal "$output" $'inner\nouter 0'
	assert key_absent redlock:name
}

@test "the inner redlock leaves the metrics file and the run record to the outer one" {
	local d=$BATS_TEST_TMPDIR/metrics
	mkdir "$d"
	run -0 bounded --metrics-dir "$d" --record name sh -c '
		redlock --metrics-dir "$1" --record name true || exit 10
		grep -h "^redlock_running{" "$1"/*.prom' sh "$d"
	assert_output --regexp '^redlock_running\{.*\} 1$'
	run -0 grep -h '^redlock_runs_total{outcome="ok"' "$d"/*.prom
	assert_output --regexp ' 1$'
	run -0 redlock runs --json name
	assert_output --partial '"ok":1,'
}

@test "the inner redlock leaves the lock to the outer one" {
	# shellcheck disable=SC2016
	run -0 bounded name sh -c '
		redlock name true || exit 10
		v=$(redis-cli -s "$REDIS_SOCK" GET "$REDLOCK_KEY")
		[ "$v" = "$REDLOCK_TOKEN" ] || { echo "after inner: key=$v"; exit 11; }
		echo still-held'
	assert_output still-held
	# ... and the outer one released it.
	assert key_absent redlock:name
	run -0 redlock -n name true
}

@test "the inner redlock returns its command's status" {
	run -0 bounded name sh -c 'redlock name sh -c "exit 6"; echo "inner $?"'
	assert_output 'inner 6'
}

@test "re-entrance works with -n, -w, -c and the run verb" {
	run -0 bounded name sh -c '
		redlock -n name true || exit 1
		redlock -w 1s name true || exit 2
		redlock name -c "true" || exit 3
		redlock run name true || exit 4
		redlock -n -c true name || exit 5
		echo all'
	assert_output all
}

@test "the inner command sees the outer lock's name, key, token and fence" {
	run -0 bounded name sh -c '
		printf "%s|%s|%s|%s\n" "$REDLOCK_NAME" "$REDLOCK_KEY" "$REDLOCK_TOKEN" "$REDLOCK_FENCE"
		redlock name sh -c "printf \"%s|%s|%s|%s\n\" \"\$REDLOCK_NAME\" \"\$REDLOCK_KEY\" \"\$REDLOCK_TOKEN\" \"\$REDLOCK_FENCE\""'
	assert_equal "${#lines[@]}" 2
	assert_regex "${lines[0]}" '^name\|redlock:name\|[0-9a-f-]{36}\|[0-9]+$'
	assert_equal "${lines[1]}" "${lines[0]}"
}

@test "re-entrance goes several levels deep" {
	run -0 bounded name sh -c 'redlock name sh -c "redlock name sh -c \"redlock -n name echo deep\""'
	assert_output deep
	assert key_absent redlock:name
}

@test "a different NAME inside is a separate lock, released by the inner redlock" {
	run -0 bounded outer sh -c '
		redlock inner sh -c "redis-cli -s \"\$REDIS_SOCK\" EXISTS redlock:outer redlock:inner"
		redis-cli -s "$REDIS_SOCK" EXISTS redlock:outer redlock:inner'
	assert_equal "$output" $'2\n1'
	assert key_absent redlock:outer
}

@test "the same NAME under another prefix is not re-entrant" {
	hold_lock h -p 'other:' name
	# The outer holds redlock:name; other:name is held by someone else.
	run -1 bounded name sh -c 'redlock -n -p other: name true'
	release_lock h
}

@test "the same NAME on another server is a separate lock" {
	local second
	second=$(redis_sock second)
	# shellcheck disable=SC2016
	run -0 bounded name sh -c '
		redlock -u "unix://$1" name sh -c "redis-cli -s \"$1\" EXISTS redlock:name"' \
		sh "$second"
	assert_output 1
	assert_equal "$(rcli_at second EXISTS redlock:name)" 0
}

@test "a run given its server by -u passes it on in REDLOCK_URL: a nested redlock without -u re-enters there" {
	local second
	second=$(redis_sock second)
	# REDLOCK_URL names main; the outer run's -u, second, is what the
	# command gets, so the inner one holds nothing on main.
	# shellcheck disable=SC2016
	run -0 bounded -u "unix://$second" name sh -c '
		echo "$REDLOCK_URL"; redlock -n name sh -c "echo inner"; echo "inner $?"'
	assert_equal "$output" "unix://$second"$'\ninner\ninner 0'
	assert_equal "$(rcli_at second EXISTS redlock:name)" 0
	assert key_absent redlock:name
}

@test "a process outside the holder's tree cannot take the lock" {
	hold_lock h name
	run -1 redlock -n name true
	release_lock h
}

@test "a forged REDLOCK_HELD does not grant a held lock" {
	hold_lock h name
	REDLOCK_HELD=00000000-0000-4000-8000-000000000000 run -1 redlock -n name true
	release_lock h
}

@test "the inherited lock counts only while the key holds the outer token" {
	# Inside the outer command someone else takes the key; the inner
	# redlock must see a lock held by another owner, not its own.
	# shellcheck disable=SC2016
	run bounded --on-lost ignore name sh -c '
		redis-cli -s "$REDIS_SOCK" SET "$REDLOCK_KEY" intruder-token PX 60000 >/dev/null
		redlock -n name true
		echo "inner $?"'
	assert_output --partial 'inner 1'
	assert_equal "$(rcli GET redlock:name)" intruder-token
}
