#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --on-start and --on-exit (redlock-monitoring(7)): the healthchecks.io
# recipe of redlock-monitoring(7), "Hooks", run with curl against an
# HTTP recorder on loopback (tests/httprec.py), sends the exact requests
# for each outcome; a hook past --hook-timeout is killed with its tree
# and the exit status stays the command's; a hook never sees a token or
# a password; on-exit comes after the release, on-start beside the
# command.

load helpers
load monitor_helpers

lifecycle main -- auth --requirepass 'hook-secret-pw'
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	local d=$BATS_FILE_TMPDIR
	/usr/bin/python3 "$TESTS_DIR/httprec.py" "$d/http.port" "$d/http.log" \
		</dev/null >/dev/null 2>"$d/http.err" 3>&- &
	echo $! >"$d/http.pid"
	wait_for_file "$d/http.port" 10
	HC="http://127.0.0.1:$(cat "$d/http.port")/ping/check-1"
	export HC
	export HTTP_LOG=$d/http.log
	# The recipe, as redlock-monitoring(7) gives it.
	local page
	page=$(mandoc -Tascii "$REPO_DIR/man/redlock-monitoring.7" 2>/dev/null | col -b) ||
		page=$(cat "$REPO_DIR/man/redlock-monitoring.7")
	RECIPE_START=$(sed -n 's/^[[:space:]]*REDLOCK_ON_START=//p' <<<"$page")
	RECIPE_EXIT=$(sed -n 's/^[[:space:]]*REDLOCK_ON_EXIT=//p' <<<"$page")
	export RECIPE_START RECIPE_EXIT
}
file_teardown() {
	local pid
	pid=$(cat "$BATS_FILE_TMPDIR/http.pid" 2>/dev/null) &&
		grep -q httprec "/proc/$pid/cmdline" 2>/dev/null &&
		kill -TERM "$pid" && wait_until -t 10 pid_dead "$pid"
}
test_setup() {
	: >"$HTTP_LOG"
	[[ -n $RECIPE_START && -n $RECIPE_EXIT ]] || fail "no recipe in man/redlock-monitoring.7"
}

# with_recipe ARGS...: redlock ARGS with redlock-monitoring(7)'s hooks.
with_recipe() {
	REDLOCK_ON_START=$RECIPE_START REDLOCK_ON_EXIT=$RECIPE_EXIT "$RL" "$@"
}

# assert_requests LINE...: the recorder got exactly these requests, in
# order, with RID standing for the run id (the same UUID throughout).
assert_requests() {
	local got rid want
	got=$(cat "$HTTP_LOG")
	rid=$(sed -n 's/.*?rid=\([^ ]*\).*/\1/p' "$HTTP_LOG" | sort -u)
	[[ $rid =~ $UUID_RE ]] || fail "not one run id (a UUID) in: $got"
	want=$(printf '%s\n' "$@")
	assert_equal "$got" "${want//RID/$rid}"
}

@test "the recipe's requests when the command succeeds: a start, then exit status 0" {
	run -0 with_recipe job true
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/0?rid=RID ok"
}

@test "the recipe's requests when the command fails, dies of a signal, or cannot be run" {
	run -3 with_recipe job sh -c 'exit 3'
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/3?rid=RID failed"
	: >"$HTTP_LOG"
	run -137 with_recipe job sh -c 'kill -KILL $$'
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/137?rid=RID signal"
	: >"$HTTP_LOG"
	run -127 with_recipe job /nonexistent/command
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/127?rid=RID exec_failed"
}

@test "the recipe's requests for a skip: one log entry, busy or timeout, and no start" {
	hold_lock h job
	run -0 with_recipe -n -q -E 0 job true
	assert_requests "POST /ping/check-1/log?rid=RID busy"
	: >"$HTTP_LOG"
	run -1 with_recipe -w 200ms job true
	assert_requests "POST /ping/check-1/log?rid=RID timeout"
	release_lock h
}

@test "the recipe's requests when Redis cannot be reached: exit status 69, no start" {
	run -69 with_recipe -u "redis://127.0.0.1:$(dead_port)" job true
	assert_requests "POST /ping/check-1/69?rid=RID unavailable"
}

@test "the recipe's requests when the lock is lost, --max-time runs out, or stop asks" {
	bg_start h env REDLOCK_ON_START="$RECIPE_START" REDLOCK_ON_EXIT="$RECIPE_EXIT" \
		"$RL" -t 1s job sleep 30
	wait_for_key redlock:job
	wait_until test -s "$HTTP_LOG"
	rcli DEL redlock:job >/dev/null
	bg_wait h 20
	assert_equal "$BG_STATUS" 75
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/75?rid=RID lost"
	: >"$HTTP_LOG"
	run -124 with_recipe --max-time 300ms job sleep 30
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/124?rid=RID max_time"
	: >"$HTTP_LOG"
	bg_start h env REDLOCK_ON_START="$RECIPE_START" REDLOCK_ON_EXIT="$RECIPE_EXIT" \
		"$RL" -t 1s job sleep 30
	wait_for_key redlock:job
	wait_until test -s "$HTTP_LOG"
	run -0 redlock stop job
	bg_wait h 20
	assert_equal "$BG_STATUS" 143
	assert_requests "GET /ping/check-1/start?rid=RID " "POST /ping/check-1/143?rid=RID stopped"
}

@test "each run has a run id of its own" {
	with_recipe job true
	with_recipe job true
	run sh -c "sed -n 's/.*?rid=\([^ ]*\).*/\1/p' '$HTTP_LOG' | sort -u | wc -l"
	assert_output 2
}

@test "a hook still running at --hook-timeout is killed with its tree; the status is the command's" {
	local d=$BATS_TEST_TMPDIR t0 t1
	t0=$(now_ms)
	run -3 --separate-stderr redlock --hook-timeout 500ms \
		--on-exit "sleep 30 & echo \$! >'$d/bg'; echo \$\$ >'$d/sh'; wait" \
		job sh -c 'exit 3'
	t1=$(now_ms)
	assert_equal "$stderr" "redlock: the --on-exit hook was still running after 500ms (--hook-timeout): killed it"
	(( t1 - t0 < $(scale_ms 3000) )) || fail "took $((t1 - t0)) ms"
	wait_until pid_dead "$(cat "$d/bg")"
	wait_until pid_dead "$(cat "$d/sh")"
}

@test "an on-start hook past its timeout is killed too, and neither the command nor the exit waits long" {
	local d=$BATS_TEST_TMPDIR t0 t1
	t0=$(now_ms)
	run -0 --separate-stderr redlock --hook-timeout 300ms \
		--on-start "echo \$\$ >'$d/sh'; exec sleep 30" --on-exit "echo exit >>'$d/order'" \
		job sh -c "echo cmd >>'$d/order'"
	t1=$(now_ms)
	assert_equal "$stderr" "redlock: the --on-start hook was still running after 300ms (--hook-timeout): killed it"
	(( t1 - t0 < $(scale_ms 2500) )) || fail "took $((t1 - t0)) ms"
	assert_equal "$(cat "$d/order")" $'cmd\nexit'
	wait_until pid_dead "$(cat "$d/sh")"
}

@test "a hook that fails is reported; the status is the command's, and the hook's output goes to stderr" {
	run -0 --separate-stderr redlock --on-exit 'echo from-hook; exit 7' job echo from-command
	assert_output from-command
	assert_equal "$stderr" $'from-hook\nredlock: the --on-exit hook failed with exit status 7'
}

@test "on-start runs beside the command, on-exit after the release and after on-start" {
	local d=$BATS_TEST_TMPDIR
	run -0 redlock --on-start "sleep 0.5; echo start >>'$d/order'" \
		--on-exit "'$RL' -n -E 9 \"\$REDLOCK_NAME\" true; echo \"exit \$?\" >>'$d/order'" \
		job sh -c "echo cmd >>'$d/order'"
	# The command did not wait for on-start; on-exit found the lock free.
	assert_equal "$(cat "$d/order")" $'cmd\nstart\nexit 0'
}

@test "a hook is told the outcome, the run id, the host and the times" {
	local d=$BATS_TEST_TMPDIR
	run -4 redlock --on-start "env >'$d/start.env'" --on-exit "env >'$d/exit.env'" \
		job sh -c "echo \$REDLOCK_FENCE >'$d/fence'; sleep 0.2; exit 4"
	run grep '^REDLOCK_' "$d/start.env"
	assert_line REDLOCK_HOOK=start
	assert_line REDLOCK_NAME=job
	assert_line "REDLOCK_HOST=$(hostname)"
	assert_line "REDLOCK_FENCE=$(cat "$d/fence")"
	assert_line --regexp '^REDLOCK_WAIT_MS=[0-9]+$'
	refute_line --regexp '^REDLOCK_OUTCOME='
	local rid
	rid=$(sed -n 's/^REDLOCK_RUN_ID=//p' "$d/start.env")
	[[ $rid =~ $UUID_RE ]]
	run grep '^REDLOCK_' "$d/exit.env"
	assert_line REDLOCK_HOOK=exit
	assert_line REDLOCK_OUTCOME=failed
	assert_line REDLOCK_EXIT_STATUS=4
	assert_line "REDLOCK_RUN_ID=$rid"
	assert_line --regexp '^REDLOCK_RUN_MS=[0-9]+$'
	(($(sed -n 's/^REDLOCK_RUN_MS=//p' "$d/exit.env") >= 150)) || fail "the run took longer"
}

@test "env in a hook shows no token and no password" {
	local d=$BATS_TEST_TMPDIR pw=hook-secret-pw
	printf '%s\n' "$pw" >"$d/pwfile"
	local url
	url="unix://$(redis_sock auth)"
	# An outer redlock holds another lock, so the inner one inherits its
	# token in REDLOCK_HELD.
	run -0 env REDLOCK_PASSWORD="$pw" REDISCLI_AUTH="$pw" REDLOCK_SENTINEL_PASSWORD="$pw" \
		"$RL" -u "$url" outer sh -c '
		echo "$REDLOCK_TOKEN" >"$1/outer.tok"
		REDLOCK_URL="redis://:$2@127.0.0.1:1" exec "$0" -u "$3" --password-file "$1/pwfile" \
			--on-start "env >\"$1/start.env\"" --on-exit "env >\"$1/exit.env\"" \
			inner sh -c "echo \"\$REDLOCK_TOKEN\" >\"$1/inner.tok\""' "$RL" "$d" "$pw" "$url"
	local f t
	for f in "$d/start.env" "$d/exit.env"; do
		[[ -s $f ]] || fail "no $f"
		run grep -c -e "$pw" -e "$(cat "$d/outer.tok")" -e "$(cat "$d/inner.tok")" "$f"
		assert_output 0
		run grep -E '^(REDLOCK_TOKEN|REDLOCK_HELD|REDLOCK_PASSWORD|REDLOCK_PASSWORD_FILE|REDISCLI_AUTH|REDLOCK_SENTINEL_PASSWORD|REDLOCK_URL)=' "$f"
		assert_output ''
		grep -qx REDLOCK_NAME=inner "$f"
	done
	grep -qx REDLOCK_OUTCOME=ok "$d/exit.env"
	[[ $(cat "$d/inner.tok") =~ $UUID_RE ]]
}

# signal_during_exit_hook SIG STATUS [OPTION...]: SIG sent to redlock while
# its on-exit hook runs (a 30 s hook timeout, so nothing waits it out)
# stops the hook's whole tree at once and redlock exits STATUS; the lock
# was released before the hook.
signal_during_exit_hook() {
	local d=$BATS_TEST_TMPDIR sig=$1 want=$2 t0 t1
	shift 2
	bg_start r "$RL" --hook-timeout 30s "$@" \
		--on-exit "sleep 60 & echo \$! >'$d/bg'; echo \$\$ >'$d/sh'; wait" job true
	wait_for_file "$d/sh" 10
	t0=$(now_ms)
	kill "-$sig" "$(bg_pid r)"
	bg_wait r 10
	t1=$(now_ms)
	assert_equal "$BG_STATUS" "$want"
	# A generous bound, far below the hook's 30 s: the hook was not waited out.
	(( t1 - t0 < $(scale_ms 5000) )) || fail "took $((t1 - t0)) ms"
	wait_until -t 5 pid_dead "$(cat "$d/bg")"
	wait_until -t 5 pid_dead "$(cat "$d/sh")"
	assert key_absent redlock:job
	run grep -c "redlock: the --on-exit hook was stopped, with its tree: signal" "$d/r.err"
	assert_output 1
}

@test "SIGTERM during the on-exit hook stops the hook with its tree and exits 143" {
	signal_during_exit_hook TERM 143
}

@test "SIGINT during the on-exit hook stops the hook with its tree and exits 130" {
	signal_during_exit_hook INT 130
}

@test "SIGTERM during a --respawn round's on-exit hook ends the standby with 143" {
	signal_during_exit_hook TERM 143 --respawn
}

@test "SIGTERM while redlock waits for the on-start hook to end exits 143 at once and runs no on-exit hook" {
	local d=$BATS_TEST_TMPDIR t0 t1
	bg_start r "$RL" --hook-timeout 30s --on-start "echo \$\$ >'$d/sh'; exec sleep 60" \
		--on-exit "touch '$d/exit-ran'" job true
	wait_for_file "$d/sh" 10
	wait_for_no_key redlock:job 10
	t0=$(now_ms)
	kill -TERM "$(bg_pid r)"
	bg_wait r 10
	t1=$(now_ms)
	assert_equal "$BG_STATUS" 143
	(( t1 - t0 < $(scale_ms 5000) )) || fail "took $((t1 - t0)) ms"
	assert [ ! -e "$d/exit-ran" ]
	assert_equal "$(cat "$d/r.err")" "redlock: the --on-exit hook was not run: signal 15 asked redlock to end"
}
