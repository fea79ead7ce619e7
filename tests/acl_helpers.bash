# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Helpers for the ACL files (acl.bats, acl-needed-*.bats), on top of
# helpers.bash (load that first; then lifecycle main --tcp): the user
# made from the `ACL SETUSER` line of man/redlock-protocol.7 ("Access
# control"), its password in a file (file_setup and test_setup, which
# lifecycle calls), and cycle, every verb and feature of redlock once
# as that user.

USER_PW='Acl-User-Pw-61f0'

# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	printf '%s\n' "$USER_PW" >"$BATS_FILE_TMPDIR/user.pw"
}
test_setup() {
	rcli ACL DELUSER redlock >/dev/null
	rcli ACL LOG RESET >/dev/null
	# As the user, with the password from a file, which nested redlocks
	# (re-entrance) inherit.
	REDLOCK_URL="redis://redlock@127.0.0.1:$(redis_port main)"
	export REDLOCK_URL
	export REDLOCK_PASSWORD_FILE=$BATS_FILE_TMPDIR/user.pw
}

# The ACL SETUSER line of the man page, as words, in ACL_WORDS.
read_acl_line() {
	local line
	line=$(grep -m1 '^ACL SETUSER ' "$REPO_DIR/man/redlock-protocol.7")
	[[ -n $line ]] || fail "no 'ACL SETUSER' line in man/redlock-protocol.7"
	read -r -a ACL_WORDS <<<"$line"
}

# set_user [WORD-TO-DROP]: create the user from the man page's line, with
# the test's password, without WORD-TO-DROP.
set_user() {
	local w
	local -a args=()
	read_acl_line
	for w in "${ACL_WORDS[@]:2}"; do
		[[ $w == "${1:-}" ]] && continue
		[[ $w == '>PASSWORD' ]] && w=">$USER_PW"
		args+=("$w")
	done
	[[ $(rcli ACL SETUSER "${args[@]}") == OK ]]
}

acl_denials() { rcli ACL LOG | grep -c . || true; }
blpop_waiting() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }

# cycle [soft]: every verb and path of redlock once, on a fresh name,
# and every feature: shared locks, --limit, --record and runs with
# --skip-alert, --fair, --once-per, --lock-delay, --replace, stop and
# break.
# Strict (the default): each step must do what it should.  soft: run the
# steps whatever happens, waiting briefly, until Redis denies something.
cycle() {
	local soft=${1:-} tok status mode w=10
	[[ -n $soft ]] && w=1
	# Soft: once Redis has denied something, the rest can be skipped.
	denied() { [[ -n $soft ]] && (($(acl_denials) > 0)); }
	# The run form, renewing, with a nested redlock (re-entrance).
	redlock -w "$w" -t 300ms job sh -c 'sleep 0.4; redlock -w 1 "$REDLOCK_NAME" true' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	tok=$(redlock acquire -w "$w" -t 20s job) || [[ -n $soft ]] || return 1
	denied && return 0
	redlock status job >/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	[[ $(redlock list) == job* ]] || [[ -n $soft ]] || return 1
	denied && return 0
	redlock extend -t 20s job "$tok" || [[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -n job true 2>/dev/null || status=$?
	[[ $status == 1 || -n $soft ]] || return 1
	denied && return 0
	# A waiter, woken by the release.
	bg_start waiter "$RL" -w "$((w + 1))" job true
	wait_until -t "$w" blpop_waiting || [[ -n $soft ]] || return 1
	denied && return 0
	redlock release job "$tok" || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait waiter "$((w + 5))" && [[ $BG_STATUS == 0 ]] || [[ -n $soft ]] || return 1
	denied && return 0
	redlock acquire -w "$w" job >/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	redlock break job 2>/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	# Again, the first break's wake-up still pending: one is kept.
	redlock acquire -w "$w" job >/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	redlock break job 2>/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	redlock break --fence job 2>/dev/null || [[ -n $soft ]] || return 1
	denied && return 0
	# Shared locks and a semaphore, one holder inside another's lease,
	# and the status of a shared lock.
	redlock -s -w "$w" job sh -c 'redlock -s -w 1 job2 true &&
		redlock status job >/dev/null' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	redlock --limit 2 -w "$w" -t 300ms sem sh -c 'sleep 0.4' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	# An operator asks a holder to stop (exclusive, then shared); it
	# finds the request at its next renewal, within ttl/3.
	for mode in -x -s; do
		bg_start holder "$RL" "$mode" -t 3s -w "$w" job sleep 30
		wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:job) == 1 ]]' ||
			[[ -n $soft ]] || return 1
		denied && return 0
		redlock stop -w "$w" job 2>/dev/null || [[ -n $soft ]] || return 1
		denied && return 0
		bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
		denied && return 0
	done
	# The run record: a run, then a busy attempt that --skip-alert 1
	# names, then the fleet's records, as a table and for Prometheus.
	redlock --record -w "$w" rec true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_start holder "$RL" -t 3s -w "$w" rec sleep 30
	wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:rec) == 1 ]]' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -n -q --record --skip-alert 1 rec true 2>"$BATS_TEST_TMPDIR/alert" || status=$?
	[[ $status == 1 ]] && grep -q "lock 'rec' was busy 1 times in a row: held by" \
		"$BATS_TEST_TMPDIR/alert" || [[ -n $soft ]] || return 1
	denied && return 0
	# --replace: the holder is asked to stop, and the replacement runs.
	redlock --replace -w "$w" rec true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
	[[ $(redlock runs rec) == *$'\n'rec*ok* ]] || [[ -n $soft ]] || return 1
	denied && return 0
	[[ $(redlock runs --prom rec) == *'redlock_record_runs_total{name="rec",'*',outcome="busy"} 1'* ]] ||
		[[ -n $soft ]] || return 1
	denied && return 0
	# --fair: a waiter queues (fair.lua) behind a holder, then runs.
	bg_start holder "$RL" -t 3s -w "$w" fjob sleep 1
	wait_until -t "$w" eval '[[ $(rcli EXISTS redlock:fjob) == 1 ]]' ||
		[[ -n $soft ]] || return 1
	denied && return 0
	redlock --fair -w "$((w + 5))" fjob true || [[ -n $soft ]] || return 1
	denied && return 0
	bg_wait holder "$((w + 5))" || [[ -n $soft ]] || return 1
	denied && return 0
	# --once-per: a success, then a skip with the conflict status.
	redlock --once-per 1h once true || [[ -n $soft ]] || return 1
	denied && return 0
	status=0
	redlock -E 7 --once-per 1h once true || status=$?
	[[ $status == 7 ]] || [[ -n $soft ]] || return 1
	denied && return 0
	# --lock-delay: a holder with a delay, released.
	redlock --lock-delay 2s -w "$w" delay true || [[ -n $soft ]] || return 1
	denied && return 0
	return 0
}

# each_needed K N: every permission word of the man page's line whose
# place among them is K modulo N is needed: without it Redis denies
# some step of cycle.  (acl-needed-*.bats: a share of the words each.)
each_needed() {
	local k=$1 n=$2 w i=0
	read_acl_line
	for w in "${ACL_WORDS[@]:3}"; do
		[[ $w == +* || $w == ~* ]] || continue
		((i++ % n == k)) || continue
		rcli FLUSHALL >/dev/null
		rcli SCRIPT FLUSH >/dev/null
		rcli ACL LOG RESET >/dev/null
		set_user "$w"
		cycle soft
		_kill_bg_jobs
		(($(acl_denials) > 0)) || fail "nothing needs '$w': drop it from the man page"
	done
	((i > 0)) || fail "no permission words in the man page's line"
}
