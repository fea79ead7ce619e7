#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# What redlock must never give away (redlock(1), SYNOPSIS; redlock(1), TLS and Passwords; "What a holder leaves in Redis" in redlock-protocol(7)): a password in a
# URL it cannot parse, a password in its memory (no core, no same-user
# reader), and a command's arguments in the holder record unless asked.

load helpers

lifecycle main --tcp

@test "a malformed URL with a password never shows it, in its user information or its query, from -u or REDLOCK_URL" {
	local u
	for u in 'redis:/:s3cr3t@host' 'redis//:s3cr3t@host' ':s3cr3t@host' \
		's3cr3t@host:6379' 'unix://:s3cr3t@/sock' 'redis://u:s3cr3t@host:99999' \
		'redis+sentinel:/:s3cr3t@h/svc' 'unix:///sock?password=s3cr3t' \
		'redis://host:1?db=2&password=s3cr3t'; do
		run -64 redlock -u "$u" name true
		refute_output --partial s3cr3t
		assert_output --partial '***'
		REDLOCK_URL=$u run -64 redlock name true
		refute_output --partial s3cr3t
	done
}

# The owner of /proc/PID/environ: a non-dumpable process's files are
# root's whatever its user.
proc_owner() { stat -c %u "/proc/$1/environ"; }

@test "redlock is not dumpable (no core, no same-user reader), and its command is an ordinary process" {
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is needed"
	((EUID == 0)) || skip "needs root to run redlock as another user"
	# A directory the other user can write, outside bats's private one.
	local d
	d=$(mktemp -d /tmp/redlock-dump.XXXXXX)
	chmod 777 "$d"
	bg_start h setpriv --reuid=65534 --regid=65534 --clear-groups \
		"${REDLOCK:-$REPO_DIR/redlock}" -u "redis://127.0.0.1:$(redis_port main)" dump \
		sh -c 'echo $$ >"$1/child"; sleep 30' cmd "$d"
	wait_for_file "$d/child" || fail "$(bg_err h)"
	assert_equal "$(proc_owner "$(cat "$d/child")")" 65534
	assert_equal "$(proc_owner "$(bg_pid h)")" 0
	kill -TERM "$(bg_pid h)"
	bg_wait h
	rm -rf "$d"
}

@test "the holder record keeps the command's name, not its arguments" {
	hold_lock h plain
	run -0 redlock status plain
	assert_output --partial 'command: /bin/sh'
	run -0 redlock status --json plain
	assert_output --partial '"cmd":"/bin/sh"'
	refute_output --partial 'release'
	release_lock h
	# What reaches Redis, not only what status shows.
	bg_start p "$RL" secret sh -c 'sleep 30' mysqldump -pSECRET
	wait_for_key redlock:secret
	run -0 redlock status secret
	assert_output --partial 'command: sh'
	refute_output --partial mysqldump
	run bash -c 'redis-cli -s "$REDIS_SOCK" --scan | while read -r k; do redis-cli -s "$REDIS_SOCK" --raw DUMP "$k"; done'
	refute_output --partial SECRET
}

@test "-c records sh, --store-args the whole command, --label a text of one's own" {
	bg_start a "$RL" shell -c 'sleep 30 # pw=SECRET'
	wait_for_key redlock:shell
	run -0 redlock status shell
	assert_output --partial 'command: sh'
	refute_output --partial SECRET
	bg_start b "$RL" --store-args full sleep 31
	wait_for_key redlock:full
	run -0 redlock status full
	assert_output --partial 'command: sleep 31'
	REDLOCK_STORE_ARGS=1 bg_start c "$RL" full2 sleep 32
	wait_for_key redlock:full2
	run -0 redlock status full2
	assert_output --partial 'command: sleep 32'
	bg_start d "$RL" --label 'nightly backup' lab sleep 33
	wait_for_key redlock:lab
	run -0 redlock status lab
	assert_output --partial 'command: nightly backup'
	# Not the command: neither its name nor its argument.
	refute_output --partial sleep
	REDLOCK_LABEL='env label' bg_start e "$RL" lab2 sleep 34
	wait_for_key redlock:lab2
	run -0 redlock list 'lab*'
	assert_output --partial 'env label'
	assert_output --partial 'nightly backup'
}

@test "acquire records (acquire), or its --label" {
	run -0 redlock acquire plain
	run -0 redlock status plain
	assert_output --partial 'command: (acquire)'
	run -0 redlock acquire --label 'by hand: migration' lab
	run -0 redlock status lab
	assert_output --partial 'command: by hand: migration'
}

@test "-c, --once-per and --respawn on a verb's command line are usage errors; the variables are left alone" {
	run -64 --separate-stderr redlock acquire --once-per 1h x
	assert_equal "${stderr_lines[0]}" "redlock: --once-per is for the run form (redlock NAME COMMAND), not for 'acquire'"
	run -64 --separate-stderr redlock --respawn status x
	assert_equal "${stderr_lines[0]}" "redlock: --respawn is for the run form (redlock NAME COMMAND), not for 'status'"
	run -64 --separate-stderr redlock acquire -c 'echo ran' x
	assert_equal "${stderr_lines[0]}" "redlock: -c is for the run form (redlock NAME -c STRING), not for 'acquire'"
	refute_output --partial ran
	[[ $(rcli EXISTS redlock:x) == 0 ]]
	REDLOCK_ONCE_PER=1h REDLOCK_RESPAWN=1 run -0 redlock acquire x
	[[ $(rcli EXISTS redlock:x) == 1 ]]
}

@test "--label needs a value" {
	run -64 redlock --label '' x true
	assert_output --partial "--label needs a value"
}
