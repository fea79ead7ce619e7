#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --record, runs and --skip-alert (redlock-monitoring(7)): the last run of a
# NAME kept in Redis as seen from two hosts sharing one server (two UTS
# namespaces with host names of their own: the holder's record takes
# gethostname()); the fleet verb, promtool-clean; a hung holder that the
# third quiet skip in a row names; and what a run costs Redis with and
# without --record.

load helpers
load monitor_helpers

lifecycle main -- b -- c
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	make_as_host
}
test_setup() {
	can_be_another_host || skip "cannot make a UTS namespace here (unshare)"
}

# hold_on HOST TAG [REDLOCK-OPTION...] NAME: as hold_lock, run on HOST.
hold_on() {
	local host=$1 tag=$2 d=$BATS_TEST_TMPDIR
	shift 2
	rm -f "$d/$tag.held" "$d/$tag.release"
	bg_start "$tag" as-host "$host" "$RL" "$@" /bin/sh -c '
		: >"$1"; . "$TESTS_DIR/lib/await.sh"
		await_file "$2"' \
		holder "$d/$tag.held" "$d/$tag.release"
	wait_for_file "$d/$tag.held" 20
}

# record_field NAME FIELD: a field of NAME's record, read with redis-py
# (the key holds a NUL byte, which no shell argument can).
record_field() {
	SOCK=$REDIS_SOCK KEY="{redlock:$1}" FIELD=$2 /usr/bin/python3 -c '
import os, redis
r = redis.Redis(unix_socket_path=os.environ["SOCK"])
v = r.hget(os.environ["KEY"].encode() + b"\0record", os.environ["FIELD"])
print("" if v is None else v.decode("utf-8", "backslashreplace"))'
}

@test "the run record of a NAME run on two hosts: status, status --json, runs" {
	hold_on web-1 h --record job
	run -1 as-host web-2 "$RL" -n --record job true
	release_lock h
	assert_equal "$BG_STATUS" 0
	# A run ends its skips: the one above came before it ended.
	hold_on web-1 h --record job
	run -0 as-host web-2 "$RL" -n -E 0 --record job true
	run -0 as-host web-2 "$RL" -w 200ms -E 0 --record job true
	run -0 redlock status job
	assert_line --regexp '^last run: ok on web-1 [0-9.]+s ago, took [0-9.]+s; 2 skips since$'
	run -0 redlock status --json job
	assert_output --regexp '"record":\{"last_run":\{"outcome":"ok","exit_status":0,"host":"web-1",'
	assert_output --partial '"skips_since":2,"runs":{"ok":1,"failed":0,"signal":0,"busy":2,"timeout":1,'
	release_lock h
	run -3 as-host web-2 "$RL" --record job sh -c 'exit 3'
	run -1 redlock status job
	assert_line --regexp '^last run: failed \(exit status 3\) on web-2 [0-9.]+s ago, took [0-9.]+s; 0 skips since$'
	assert_line --regexp '^last ok:  on web-1 [0-9.]+s ago$'
	run -0 redlock runs
	assert_line --index 0 --regexp '^NAME +LAST +EXIT +ENDED +TOOK +LAST OK +SKIPS +HOST$'
	assert_line --index 1 --regexp '^job +failed +3 +[0-9.]+s ago +[0-9.]+s +[0-9.]+s ago +0 +web-2$'
	run -0 redlock runs --json
	assert_output --regexp '^\{"name":"job","record":\{"last_run":\{"outcome":"failed","exit_status":3,"host":"web-2",.*"last_success":\{"end_ms":[0-9]+,"host":"web-1"\}'
}

# owner_labels: the labels after name that runs --prom gives every
# record, as the hosts' metrics files give theirs: the key prefix and
# the servers (this file's one server, by its socket's path).
owner_labels() { printf ',prefix="redlock:",servers="%s"' "$REDIS_SOCK"; }

@test "runs --prom: the fleet's records as Prometheus text that promtool accepts, with the labels of the hosts' files" {
	local o
	o=$(owner_labels)
	as-host web-1 "$RL" --record job true
	as-host web-2 "$RL" --record run $'odd "name"\nwith\\ bytes \xff' true
	run -0 --separate-stderr redlock runs --prom
	echo "$output" | assert_promtool_clean
	assert_line "redlock_record_last_run_info{name=\"job\"$o,outcome=\"ok\",host=\"web-1\"} 1"
	assert_line "redlock_record_last_exit_status{name=\"job\"$o} 0"
	assert_line "redlock_record_skips{name=\"job\"$o} 0"
	assert_line "redlock_record_runs_total{name=\"job\"$o,outcome=\"ok\"} 1"
	# A backslash is \x5c, as runs prints it (no two names one label).
	assert_line "redlock_record_last_run_info{name=\"odd \\\"name\\\"\\nwith\\\\x5c bytes \\\\xff\"$o,outcome=\"ok\",host=\"web-2\"} 1"
	# No client timestamps: a name, labels and one value a line.
	run awk '!/^#/ && !/^redlock_record_[a-z_]+\{.*\} [0-9.]+$/' <<<"$output"
	assert_output ''
	# Under another prefix: its own label.
	redlock -p 'other:' --record job true
	run -0 redlock -p 'other:' runs --prom
	assert_line --partial 'redlock_record_skips{name="job",prefix="other:",'
	# A host's file for the same lock: its series have the same labels.
	redlock --metrics-dir "$BATS_TEST_TMPDIR" job true
	run -0 grep -h '^redlock_last_success_timestamp_seconds{' "$BATS_TEST_TMPDIR"/redlock_job~*.prom
	assert_output --regexp "^redlock_last_success_timestamp_seconds\\{name=\"job\"$o\\} [0-9.]+$"
}

@test "runs: PATTERN, the prefix, and every server of a quorum once" {
	local q
	q="-u unix://$(redis_sock main) -u unix://$(redis_sock b) -u unix://$(redis_sock c)"
	# shellcheck disable=SC2086
	redlock $q --record backup-db true
	# shellcheck disable=SC2086
	redlock $q --record backup-www true
	# shellcheck disable=SC2086
	redlock $q --record report true
	redlock -p other: --record backup-other true
	# shellcheck disable=SC2086
	run -0 redlock $q runs --json 'backup-*'
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp '^\{"name":"backup-db",'
	assert_line --index 1 --regexp '^\{"name":"backup-www",'
	run -0 redlock -p other: runs --json
	assert_equal "${#lines[@]}" 1
	assert_line --index 0 --regexp '^\{"name":"backup-other",'
	run -0 redlock runs 'nothing*'
	assert_equal "${#lines[@]}" 1
	run -69 redlock -u "redis://127.0.0.1:$(dead_port)" runs
	run -74 --separate-stderr sh -c '"$RL" runs >/dev/full'
	assert_equal "$stderr" "redlock: cannot write the run records of locks '*' to stdout: No space left on device"
}

@test "a hung holder makes the third quiet skip in a row exit 1, naming it" {
	hold_on web-9 hung --record job
	local pid i
	pid=$(bg_pid hung)
	for i in 1 2; do
		run -0 --separate-stderr redlock -n -E 0 -q --record --skip-alert 3 job true
		assert_equal "$stderr" ''
	done
	run -1 --separate-stderr redlock -n -E 0 -q --record --skip-alert 3 job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: lock 'job' was busy 3 times in a row: held by [^@]+@web-9 pid $pid since [0-9T:-]+Z \([0-9.]+s ago\)$"
	# And every one after it, until a run gets the lock.
	run -1 --separate-stderr redlock -n -E 0 -q --record --skip-alert 3 job true
	assert_regex "$stderr" "was busy 4 times in a row: held by .*@web-9 pid $pid "
	release_lock hung
	run -0 redlock --record job true
	hold_on web-9 hung --record job
	run -0 --separate-stderr redlock -n -E 0 -q --record --skip-alert 3 job true
	assert_equal "$stderr" ''
	release_lock hung
}

@test "--skip-alert counts -w timeouts too, and needs --record" {
	hold_on web-9 h job
	run -0 redlock -w 100ms -E 0 -q --record --skip-alert 2 job true
	run -1 --separate-stderr redlock -w 100ms -E 0 -q --record --skip-alert 2 job true
	assert_regex "$stderr" "^redlock: lock 'job' was busy 2 times in a row: held by .*@web-9 "
	release_lock h
	run -64 --separate-stderr redlock -n --skip-alert 2 job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" '--skip-alert needs --record'
	REDLOCK_SKIP_ALERT=2 run -64 --separate-stderr redlock -n job true
	assert_regex "${stderr_lines[0]}" 'REDLOCK_SKIP_ALERT needs --record'
	REDLOCK_RECORD=1 REDLOCK_SKIP_ALERT=2 run -0 redlock -n job true
	[[ $(record_field job outcome) == ok ]]
}

@test "--skip-alert names the earliest of shared holders and counts the others" {
	hold_on web-9 r1 -s job
	hold_on web-8 r2 -s job
	local pid
	pid=$(bg_pid r1)
	run -1 --separate-stderr redlock -n -E 0 -q --record --skip-alert 1 job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: lock 'job' was busy 1 times in a row: held shared by [^@]+@web-9 pid $pid since [0-9T:-]+Z \([0-9.]+s ago\), and 1 other holder$"
	release_lock r1
	release_lock r2
}

@test "--once-per skips are not busy attempts: --skip-alert never counts them, --record keeps the success" {
	run -0 redlock --record --once-per 1h job true
	local i
	for i in 1 2 3; do
		run -0 --separate-stderr redlock -E 0 -q --record --skip-alert 2 --once-per 1h job true
		assert_equal "$stderr" ''
		run -0 --separate-stderr redlock -w 2s -E 0 -q --record --skip-alert 2 --once-per 1h job true
		assert_equal "$stderr" ''
	done
	[[ $(record_field job outcome) == ok ]]
	[[ $(record_field job skips) == 0 ]]
}

@test "runs prints every outcome word whole" {
	run -127 redlock --record job /nonexistent/command
	run -0 redlock runs
	assert_line --regexp '^job +exec_failed +127 '
}

@test "the record holds the run, never the token, beside the lock, for five weeks" {
	run -0 redlock --record job sh -c 'echo "$REDLOCK_TOKEN $REDLOCK_FENCE"'
	local token=${output% *} fence=${output#* }
	[[ $token =~ $UUID_RE ]]
	assert_equal "$(record_field job outcome)" ok
	assert_equal "$(record_field job exit_status)" 0
	assert_equal "$(record_field job fence)" "$fence"
	assert_equal "$(record_field job host)" "$(hostname)"
	assert_equal "$(record_field job pid)" "$(record_field job pid | tr -cd 0-9)"
	run keyspace_snapshot
	refute_output --partial "$token"
	assert_line "b'{redlock:job}\\x00record' hash"
	SOCK=$REDIS_SOCK T=$token /usr/bin/python3 -c '
import os, redis
r = redis.Redis(unix_socket_path=os.environ["SOCK"])
k = b"{redlock:job}\0record"
for f, v in r.hgetall(k).items():
    assert os.environ["T"].encode() not in v, f
ms = r.pttl(k)
assert 34 * 86400000 < ms <= 35 * 86400000, ms
' || fail "the record holds the token, or does not expire in five weeks"
}

# eval_calls: calls of EVAL and EVALSHA on the server since the last
# CONFIG RESETSTAT.
eval_calls() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[:,=]' '/^cmdstat_eval/ { n += $3 } END { print n + 0 }'
}

# cmd_calls COMMAND: calls of COMMAND (inside scripts too).
cmd_calls() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[:,=]' -v c="cmdstat_$1" '$1 == c { n = $3 } END { print n + 0 }'
}

# all_calls: calls of every command but INFO and CONFIG.
all_calls() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[:,=]' '/^cmdstat_/ && !/^cmdstat_(info|config)/ { n += $3 } END { print n + 0 }'
}

@test "without --record a run sends Redis nothing more; with it one more script call, none per renewal" {
	local d=$BATS_TEST_TMPDIR/m plain rec
	mkdir -p "$d"
	# The fencing counter seeded, every run below asks the same of it.
	redlock job true
	rcli CONFIG RESETSTAT >/dev/null
	redlock job true
	plain=$(all_calls)
	rcli CONFIG RESETSTAT >/dev/null
	redlock --metrics-dir "$d" --on-start true --on-exit true job true
	assert_equal "$(all_calls)" "$plain"
	run keyspace_snapshot
	refute_output --partial record
	plain=$(eval_calls)
	# The first script call on a server also sends the script once.
	redlock --record job true
	rcli CONFIG RESETSTAT >/dev/null
	redlock --record job true
	assert_equal "$(eval_calls)" "$((plain + 1))"
	# Renewals (every 100 ms for 1 s) touch no record: the record's
	# commands are those of a run without renewals.
	rcli CONFIG RESETSTAT >/dev/null
	redlock -t 300ms --record job sleep 1
	assert_equal "$(cmd_calls hget) $(cmd_calls hset)" "1 1"
	(($(cmd_calls evalsha) >= 6)) || fail "no renewals?"
}

@test "a busy attempt with --record costs one script call, and unavailable records nothing" {
	hold_lock h job
	rcli CONFIG RESETSTAT >/dev/null
	run -1 redlock -n job true
	local plain
	plain=$(eval_calls)
	rcli CONFIG RESETSTAT >/dev/null
	run -1 redlock -n --record job true
	assert_equal "$(eval_calls)" "$((plain + 1))"
	release_lock h
	run -69 redlock -u "redis://127.0.0.1:$(dead_port)" --record other true
	run keyspace_snapshot
	refute_output --partial 'other'
}

@test "list --json includes each held lock's record" {
	redlock --record job true
	hold_lock h job
	run -0 redlock list --json
	assert_output --regexp '^\{"name":"job",.*"record":\{"last_run":\{"outcome":"ok",'
	release_lock h
}

# server_s: the server's clock (TIME), in whole seconds.
server_s() { rcli TIME | head -1; }

# prom_value FAMILY NAME: the value of FAMILY{name="NAME"} in runs --prom.
prom_value() {
	redlock runs --prom | awk -v s="$1{name=\"$2\"$(owner_labels)}" 'index($0, s " ") == 1 { print $2 }'
}

@test "the run record keeps the server's time whatever the hosts' clocks: a host 2 h slow and one 3 h fast" {
	local lib skew t0 t1 v fam
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[[ -e $lib ]] && break
	done
	[[ -e $lib ]] || skip "libfaketime.so.1 not found (apt-get install faketime)"
	# As once-per.bats does: the library preloaded into one timeout(1)
	# per simulated host, not the faketime(1) wrapper.
	for skew in -2h +3h; do
		t0=$(server_s)
		env LD_PRELOAD="$lib" FAKETIME="$skew" timeout 60 "$RL" --record \
			"job$skew" sh -c 'sleep 0.2' || fail "the run on the host $skew failed"
		env LD_PRELOAD="$lib" FAKETIME="$skew" timeout 60 "$RL" --record \
			"job$skew" sh -c 'exit 3' && fail "the failing run did not fail"
		t1=$(server_s)
		# Within the server's second-resolution window of the runs (a
		# minute of slack for a loaded machine: the skews are hours).
		for fam in start end success; do
			v=$(prom_value "redlock_record_last_${fam}_timestamp_seconds" "job$skew")
			[[ -n $v ]] || fail "no $fam time for job$skew"
			awk -v v="$v" -v lo="$((t0 - 60))" -v hi="$((t1 + 60))" \
				'BEGIN { exit !(v >= lo && v <= hi) }' ||
				fail "host $skew: last $fam $v not within the server's [$t0, $t1]"
		done
		v=$(prom_value redlock_record_last_duration_seconds "job$skew")
		awk -v v="$v" 'BEGIN { exit !(v < 5) }' || fail "duration $v"
	done
	# status on this host sees the runs as just ended.
	run redlock status 'job+3h'
	assert_output --regexp 'last run: failed \(exit status 3\) on [^ ]+ [0-9.]+s ago'
}

@test "runs --prom escapes control characters in label values, and promtool accepts it" {
	local esc=$'\x1b' name
	name="paint${esc}[31mred"$'\x07bell\x7fdel\xc2\x9bcsi'
	run -0 redlock --record "$name" true
	run -0 --separate-stderr redlock runs --prom
	[[ $output != *"$esc"* && $output != *$'\x07'* && $output != *$'\x7f'* &&
		$output != *$'\xc2\x9b'* ]] || fail "a raw control byte in: $(printf '%q' "$output")"
	assert_output --partial 'redlock_record_skips{name="paint\\x1b[31mred\\x07bell\\x7fdel\\xc2\\x9bcsi"'"$(owner_labels)} 0"
	assert_promtool_clean <<<"$output"
}
