#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2034,SC2154
#
# --fair (redlock-scheduling(7), "First come, first served: --fair"):
# waiters are granted NAME in the order in which they began to wait, on the
# server's clock; a waiter that dies, is stopped, cut off or gives up
# leaves the queue within the bound the man page states (2 s); status
# and list show the queue; nothing is left once it is empty.  On one
# server, a quorum, through Sentinel and on a Redis Cluster (those two
# are started by their tests and stopped at the end of them); with each
# option that works with --fair, and the ones refused.
#
# The three runs of ten rounds (fair-rounds.bats, fair-quorum.bats,
# fair-sentinel.bats) are files of their own, so that tests/run.sh runs
# them beside this one: each takes half a minute, and in one file with
# the rest they made the suite's longest file.

load helpers
load fault_helpers
load sentinel_helpers
load cluster_helpers
load fair_helpers

lifecycle main -- q2 -- q3

# The man page's bound on how long a dead waiter holds the queue up,
# with a second to spare for a loaded machine (the slowness factor
# scales it further).
DEAD_BOUND_MS=3000

@test "nothing is left of the queue in Redis once it is empty" {
	one_round >/dev/null
	wait_until -t 5 queued_is job 0
	run -0 rcli --scan --pattern '*fair*'
	assert_output ''
}

# head_gone HOW: the head waiter is made to fail by HOW (a function of
# its pid); the next waiter runs within the bound, the head did not.
head_gone() {
	local how=$1 t0 t1
	hold_lock h "${SRV[@]}" job
	waiter 1 1
	waiter 2 2
	"$how" "$(bg_pid w1)"
	t0=$(now_ms)
	release_lock h
	wait_until -t 10 lines_are 1
	t1=$(now_ms)
	assert_equal "$(cat "$ORDER")" 2
	assert [ $((t1 - t0)) -lt "$(scale_ms "$DEAD_BOUND_MS")" ]
	bg_wait w2
	assert_equal "$BG_STATUS" 0
}
kill_it() { kill -KILL "$1"; }
stop_it() { stop_pid "$1"; }

@test "a SIGKILLed head waiter holds the queue up no longer than the bound" {
	head_gone kill_it
}

@test "a SIGSTOPped head waiter loses its place within the bound, and goes to the back when it resumes" {
	head_gone stop_it
	cont_pid "$(bg_pid w1)"
	bg_wait w1
	assert_equal "$BG_STATUS" 0
	assert_equal "$(tr '\n' ' ' <"$ORDER")" "2 1 "
}

@test "a head waiter cut off from the server leaves the queue within the bound" {
	start_proxy main
	hold_lock h "${SRV[@]}" job
	bg_start w1 "$RL" -u "$PROXY_URL" --fair -w 60s job \
		sh -c 'echo 1 >>"$1"' sh "$ORDER"
	wait_until -t 10 queued_is job 1
	waiter 2 2
	proxy_set blackhole
	local t0 t1
	t0=$(now_ms)
	release_lock h
	wait_until -t 10 lines_are 1
	t1=$(now_ms)
	assert_equal "$(cat "$ORDER")" 2
	assert [ $((t1 - t0)) -lt "$(scale_ms "$DEAD_BOUND_MS")" ]
}

@test "a -w 1s head waiter times out and the queue moves on at once" {
	hold_lock h "${SRV[@]}" job
	bg_start w1 "$RL" "${SRV[@]}" --fair -w 1s job true
	wait_until -t 10 queued_is job 1
	waiter 2 2
	bg_wait w1
	assert_equal "$BG_STATUS" 1
	# At once: the queue holds the second waiter alone.
	run -0 queued job
	assert_output 1
	release_lock h
	bg_wait w2
	assert_equal "$BG_STATUS" 0
}

@test "a granted --fair waiter starts its command without waiting to hear that it left the queue" {
	# Load the scripts first, so that no NOSCRIPT adds a round trip.
	run -0 redlock "${SRV[@]}" --fair -w 5s job true
	start_proxy main
	# Every reply is held 500 ms: each round trip before the command
	# starts costs that much, and the machine's own share is small.
	proxy_set delay 500
	local t0 t1
	t0=$(now_ms)
	run -0 "$RL" -u "$PROXY_URL" --fair -w 30s job date +%s%3N
	t1=$output
	# Two round trips (the place in the queue, the attempt): 1000 ms; a
	# third, to leave the queue, would make it 1500.  The 350 ms between
	# are the machine's (starting redlock and date on a loaded machine).
	echo "# granted and started in $((t1 - t0)) ms" >&3
	assert [ $((t1 - t0)) -ge 1000 ]
	assert [ $((t1 - t0)) -lt $((1000 + $(scale_ms 350))) ]
	# It did leave.
	wait_until -t 5 queued_is job 0
}

# reader TAG OTHER N: a --fair shared waiter whose command meets reader
# OTHER (each waits for the other's file, at most 10 s: they must hold
# NAME at once), then logs TAG; returns once the queue is N long.
reader() {
	bg_start "$1" "$RL" "${SRV[@]}" --fair -s -w 60s job sh -c \
		'. "$2/lib/await.sh"; : >"$3/$1.in"; await_file "$3/$4.in" 10 &&
		echo "$1" >>"$5"' sh "$1" "$TESTS_DIR" "$BATS_TEST_TMPDIR" "$2" "$ORDER"
	wait_until -t 10 queued_is job "$3"
}

@test "readers and writers run in the order they came; readers that came together run together" {
	hold_lock h "${SRV[@]}" job
	reader r1 r2 1
	reader r2 r1 2
	waiter w3 3
	reader r4 r5 4
	reader r5 r4 5
	waiter w6 6
	release_lock h
	local t
	for t in r1 r2 ww3 r4 r5 ww6; do
		bg_wait "$t" 30
		assert_equal "$BG_STATUS" 0
	done
	# Each pair of readers met under the lock; the writers came between.
	assert_equal "$(sed -n 1,2p "$ORDER" | sort | tr '\n' ' ')" "r1 r2 "
	assert_equal "$(sed -n 3p "$ORDER")" w3
	assert_equal "$(sed -n 4,5p "$ORDER" | sort | tr '\n' ' ')" "r4 r5 "
	assert_equal "$(sed -n 6p "$ORDER")" w6
}

@test "a stream of readers does not starve a queued writer, nor writers the readers" {
	hold_lock h "${SRV[@]}" -s job
	waiter w1 1
	reader r2 r3 2
	reader r3 r2 3
	# A reader that comes after the queued writer waits behind it even
	# though NAME is held shared.
	bg_start r4 "$RL" "${SRV[@]}" --fair -s -w 60s job sh -c 'echo r4 >>"$1"' sh "$ORDER"
	wait_until -t 10 queued_is job 4
	run -0 cat "$ORDER"
	assert_output ''
	release_lock h
	local t
	for t in ww1 r2 r3 r4; do
		bg_wait "$t" 30
		assert_equal "$BG_STATUS" 0
	done
	# The writer first; then the readers after it, together.
	assert_equal "$(sed -n 1p "$ORDER")" w1
	assert_equal "$(sed -n 2,4p "$ORDER" | sort | tr '\n' ' ')" "r2 r3 r4 "
}

@test "status, list and --json show the queue: position, host, pid, since" {
	hold_lock h "${SRV[@]}" job
	waiter 1 1
	bg_start w2 "$RL" "${SRV[@]}" --fair -s -w 60s job true
	wait_until -t 10 queued_is job 2
	run -0 redlock "${SRV[@]}" status job
	assert_line --partial "queue:   2 waiting (--fair)"
	assert_line --regexp "^  1\. .*@$(hostname) pid $(bg_pid w1) exclusive, waiting since "
	assert_line --regexp "^  2\. .* pid $(bg_pid w2) shared, waiting since "
	run -0 redlock "${SRV[@]}" list
	assert_output --partial "[queue: 2]"
	run -0 redlock "${SRV[@]}" status --json job
	assert_output --partial "\"queued\":2,\"queue\":[{\"position\":1,\"shared\":false,"
	assert_output --partial "\"pid\":$(bg_pid w1),"
	assert_output --partial "{\"position\":2,\"shared\":true,"
	run -0 redlock "${SRV[@]}" list --json
	assert_output --partial "\"queued\":2"
	# The waiters count everyone who waits: the queue, and a waiter
	# without --fair beside it.
	bg_start w3 "$RL" "${SRV[@]}" -w 60s job true
	wait_until -t 10 _status_has job 'waiters: 3'
	run -0 redlock "${SRV[@]}" status job
	assert_line 'waiters: 3'
	run -0 redlock "${SRV[@]}" list
	assert_output --partial "[waiters: 3, standbys: 0]  [queue: 2]"
	run -0 redlock "${SRV[@]}" status --json job
	assert_output --partial '"waiters":3,"standbys":0,"queued":2,'
	run -0 redlock "${SRV[@]}" list --json
	assert_output --partial '"waiters":3,"standbys":0,"queued":2,'
	release_lock h
}
_status_has() { [[ $(redlock "${SRV[@]}" status "$1") == *"$2"* ]]; }

@test "waiters without --fair and foreign clients take a free NAME ahead of the queue" {
	# A foreign client's key is a holder like any: the queue waits for it.
	rcli SET redlock:job foreign PX 1000 >/dev/null
	waiter 1 1
	# A plain waiter is not in the queue, and runs as well.
	bg_start plain "$RL" "${SRV[@]}" -w 60s job sh -c 'echo plain >>"$1"' sh "$ORDER"
	run -0 queued job
	assert_output 1
	wait_until -t 10 lines_are 2
	bg_wait plain
	assert_equal "$BG_STATUS" 0
	bg_wait w1
	assert_equal "$BG_STATUS" 0
	assert_equal "$(sort "$ORDER" | tr '\n' ' ')" "1 plain "
}

@test "--fair with -n, -w 0 or --replace is a usage error that says why" {
	run -64 redlock --fair -n job true
	assert_output --partial "has no place in the queue"
	run -64 redlock --fair -w 0 job true
	assert_output --partial "(-w 0)"
	REDLOCK_FAIR=1 run -64 redlock --replace -w 1s job true
	assert_output --partial "REDLOCK_FAIR grants NAME in the order of the waiters, --replace"
	# Verbs that take no lock ignore it.
	REDLOCK_FAIR=1 run -1 redlock status job
}

@test "re-entrance: a nested --fair redlock of a NAME its parent holds runs at once" {
	run -0 redlock "${SRV[@]}" --fair -w 5s job \
		"$RL" "${SRV[@]}" --fair -w 5s job echo inner
	assert_output inner
}

@test "--fair works with --lock-delay and --once-per" {
	run -0 redlock "${SRV[@]}" --fair -w 5s --lock-delay 1s job true
	run -0 redlock "${SRV[@]}" --fair -w 5s --once-per 1h job echo ran
	assert_output ran
	# The period had its success: skipped, with the -E status.
	run -1 redlock "${SRV[@]}" --fair -w 5s --once-per 1h job echo ran
	refute_output ran
}

@test "acquire --fair waits in the queue like the run form, and its token holds NAME until released" {
	hold_lock h "${SRV[@]}" job
	bg_start a "$RL" "${SRV[@]}" acquire --fair -w 60s job
	wait_until -t 10 queued_is job 1
	waiter 2 2
	release_lock h
	bg_wait a
	assert_equal "$BG_STATUS" 0
	local tok
	tok=$(bg_out a)
	assert_regex "$tok" "$UUID_RE"
	# The acquired token holds NAME: the next in the queue waits for it.
	wait_until -t 5 queued_is job 1
	run -0 cat "$ORDER"
	assert_output ''
	run -0 redlock "${SRV[@]}" release job "$tok"
	bg_wait w2
	assert_equal "$BG_STATUS" 0
	assert_equal "$(cat "$ORDER")" 2
}

# The clock is skewed by preloading libfaketime, as tests/once-per.bats
# does (not the faketime(1) wrapper, whose semaphores a killed run can
# leave behind).
faketime_lib() {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[[ -e $lib ]] && echo "$lib" && return 0
	done
	return 1
}

@test "two hosts whose clocks differ by minutes: the order is the server's" {
	local lib i skew
	lib=$(faketime_lib) || skip "libfaketime.so.1 not found (apt-get install faketime)"
	hold_lock h "${SRV[@]}" job
	# Host A is ten minutes ahead, host B ten minutes behind; they come
	# in turns A B A B ...
	for i in 1 2 3 4 5 6; do
		skew=+10m
		((i % 2 == 0)) && skew=-10m
		bg_start "w$i" env LD_PRELOAD="$lib" FAKETIME="$skew" \
			"$RL" "${SRV[@]}" --fair -w 60s job sh -c 'echo "$1" >>"$2"' sh "$i" "$ORDER"
		wait_until -t 10 queued_is job "$i"
	done
	release_lock h
	for i in 1 2 3 4 5 6; do
		bg_wait "w$i" 30
		assert_equal "$BG_STATUS" 0
	done
	assert_equal "$(tr '\n' ' ' <"$ORDER")" "1 2 3 4 5 6 "
}

@test "on a Redis Cluster the waiters run in the order they came, the queue in NAME's slot" {
	local n
	NODES=(fc1 fc2 fc3)
	for n in "${NODES[@]}"; do
		start_cluster_node "$n"
	done
	cluster_create
	# Through a node that does not serve NAME: redlock follows the
	# redirection to the one that does, which keeps the queue too.
	local owner
	owner=$(owner_of redlock:job)
	SRV=(-u "redis://127.0.0.1:$(redis_port "$(not_node "$owner")")")
	local r
	for r in 1 2 3; do
		assert_equal "$(one_round)" "1 2 3 4 5 6 7 8 "
	done
	wait_until -t 5 queued_is job 0
	for n in "${NODES[@]}"; do
		run -0 rcli_at "$n" --scan --pattern '*fair*'
		assert_output ''
	done
	for n in "${NODES[@]}"; do
		stop_redis "$n"
	done
}

# limited TAG OTHER N: as reader, a --fair --limit 2 waiter, whose
# command waits for its partner's to start.  That partner is granted
# after the test's next release, on a quorum, which took more than 10 s
# once on a machine loaded to 8 (a CPU hog beside eight files): it gets
# 30.
limited() {
	bg_start "$1" "$RL" "${SRV[@]}" --fair --limit 2 -w 60s job sh -c \
		'. "$2/lib/await.sh"; : >"$3/$1.in"; await_file "$3/$4.in" 30 &&
		echo "$1" >>"$5"' sh "$1" "$TESTS_DIR" "$BATS_TEST_TMPDIR" "$2" "$ORDER"
	wait_until -t 10 queued_is job "$3"
}

@test "--limit 2 with --fair: the first two of the queue run together, in the order they came" {
	hold_lock h1 "${SRV[@]}" --limit 2 job
	hold_lock h2 "${SRV[@]}" --limit 2 job
	limited a b 1
	limited b a 2
	limited c d 3
	limited d c 4
	release_lock h1
	release_lock h2
	local t
	for t in a b c d; do
		bg_wait "$t" 30
		assert_equal "$BG_STATUS" 0
	done
	# a and b met under the lock, then c and d did.
	assert_equal "$(sed -n 1,2p "$ORDER" | sort | tr '\n' ' ')" "a b "
	assert_equal "$(sed -n 3,4p "$ORDER" | sort | tr '\n' ' ')" "c d "
}

# runs_are N: the order file has N lines.
runs_are() { [[ $(wc -l <"$ORDER") == "$1" ]]; }

# queued_pid PID: status shows PID first in the queue.
queued_pid() {
	"$RL" "${SRV[@]}" status job 2>/dev/null | grep -q "^  1\. .* pid $1 "
}

@test "--respawn with --fair: a standby's place shows in status, and each round queues again at the back" {
	# Each run logs its tag, then waits for the go file of its run.
	local cmd='. "$2/lib/await.sh"; echo "$1" >>"$3"; n=$(wc -l <"$3")
		await_file "$4/go.$n" 30'
	bg_start a "$RL" "${SRV[@]}" --fair --respawn job sh -c "$cmd" sh a \
		"$TESTS_DIR" "$ORDER" "$BATS_TEST_TMPDIR"
	wait_until -t 10 runs_are 1
	bg_start b "$RL" "${SRV[@]}" --fair --respawn job sh -c "$cmd" sh b \
		"$TESTS_DIR" "$ORDER" "$BATS_TEST_TMPDIR"
	wait_until -t 10 queued_pid "$(bg_pid b)"
	: >"$BATS_TEST_TMPDIR/go.1"
	wait_until -t 10 runs_are 2
	# The leader that let go is now the standby, at the back.
	wait_until -t 10 queued_pid "$(bg_pid a)"
	: >"$BATS_TEST_TMPDIR/go.2"
	wait_until -t 10 runs_are 3
	assert_equal "$(tr '\n' ' ' <"$ORDER")" "a b a "
	kill -TERM "$(bg_pid a)" "$(bg_pid b)"
	bg_wait a
	bg_wait b
	wait_until -t 5 queued_is job 0
}

@test "under systemd, a --fair waiter's STATUS names the holder and says its position in the queue" {
	local sock=$BATS_TEST_TMPDIR/notify.sock notes=$BATS_TEST_TMPDIR/notes
	bg_start listener "$TESTS_DIR/notify_listener.py" "$sock" "$notes"
	wait_for_file "$notes.ready"
	hold_lock h "${SRV[@]}" job
	waiter 1 1
	bg_start w2 env NOTIFY_SOCKET="$sock" "$RL" "${SRV[@]}" --fair -w 60s job true
	wait_until -t 10 grep -Eq "STATUS=waiting for lock 'job': held by .* pid [0-9]+ since .*; position 2 in the queue" "$notes" ||
		fail "$(grep STATUS "$notes")"
	release_lock h
	bg_wait w2
	assert_equal "$BG_STATUS" 0
	wait_until -t 5 grep -q READY=1 "$notes"
}

# cpu_ticks PID...: their user and system time, in clock ticks.
cpu_ticks() {
	local pid t=0 f
	for pid in "$@"; do
		read -ra f <"/proc/$pid/stat" || continue
		# utime and stime: fields 14 and 15 (comm has no spaces here).
		t=$((t + f[13] + f[14]))
	done
	echo "$t"
}

# script_calls: how many scripts and BLPOPs the server ran so far.
script_calls() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_(evalsha|eval|blpop):/ { n += $3 } END { print n + 0 }'
}

@test "a queue of 100 waiters costs next to nothing while it waits" {
	local i pids=() c0 c1 n0 n1 t0 t1 ms
	hold_lock h "${SRV[@]}" job
	for ((i = 1; i <= 100; i++)); do
		bg_start "q$i" "$RL" "${SRV[@]}" --fair -w 60s job true
		pids+=("$BG_PID")
	done
	wait_until -t 60 queued_is job 100
	t0=$(now_ms) c0=$(script_calls) n0=$(cpu_ticks "${pids[@]}")
	# The window in which the cost is measured (not a synchronisation).
	sleep 3
	t1=$(now_ms) c1=$(script_calls) n1=$(cpu_ticks "${pids[@]}")
	ms=$((t1 - t0))
	# Each waiter renews its place (a script) and blocks (BLPOP) at most
	# once per FAIR_RENEW_MS (250 ms), the head one attempt more: about
	# 8 commands a second each.  Twice that is the bound: a waiter that
	# spun would run thousands.
	assert [ $((c1 - c0)) -le $((100 * 16 * ms / 1000)) ]
	# Their CPU time: a renewal costs a waiter well under a millisecond,
	# so 100 waiters use some 4% of one processor; a quarter of one is
	# the bound, for a loaded machine.
	assert [ $(((n1 - n0) * 1000 / $(getconf CLK_TCK))) -le $((ms / 4)) ]
	echo "# 100 waiters over ${ms} ms: $((c1 - c0)) commands, $(((n1 - n0) * 1000 / $(getconf CLK_TCK))) ms of CPU" >&3
	kill -TERM "${pids[@]}"
	wait_until -t 30 queued_is job 0
	release_lock h
}
