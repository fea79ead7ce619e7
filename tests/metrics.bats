#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# --metrics-dir (redlock-monitoring(7)): Debian's prometheus-node-exporter,
# started here with its textfile collector alone over a directory of our
# own, reads what each kind of outcome leaves there; promtool accepts
# every file; concurrent writers never show it a torn file; any NAME is
# a safe file name and a valid label; a directory that cannot be written
# is one warning and changes nothing else.

load helpers
load monitor_helpers

OUTCOMES=(ok failed signal busy timeout unavailable exec_failed lost max_time stopped)

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	command -v promtool >/dev/null || { echo "promtool is not installed (Debian: prometheus)" >&2; return 1; }
	export MDIR=$BATS_FILE_TMPDIR/textfile
	mkdir -p "$MDIR"
	start_node_exporter "$MDIR"
}
file_teardown() {
	stop_node_exporter
}
test_setup() {
	rm -f "$MDIR"/* "$MDIR"/.redlock_*
	S=$BATS_TEST_TMPDIR/scrape
}
test_teardown() {
	local m
	# The test's jobs first: a mount they use would stay busy.
	_kill_bg_jobs
	for m in "$BATS_TEST_TMPDIR"/mnt-*; do
		[[ -d $m ]] && umount "$m" 2>/dev/null
	done
	return 0
}

# scraped: scrape node_exporter into $S; it read every file without an
# error, and promtool accepts every file.
scraped() {
	local f
	scrape "$S"
	assert_metric "$S" node_textfile_scrape_error 0
	for f in "$MDIR"/*.prom; do
		[[ -e $f ]] && assert_promtool_clean "$f"
	done
	return 0
}

# assert_outcome NAME OUTCOME STATUS: in the scrape, NAME's one
# invocation ended OUTCOME with exit status STATUS, and nothing runs.
assert_outcome() {
	local o
	for o in "${OUTCOMES[@]}"; do
		assert_metric "$S" "redlock_runs_total{name=\"$1\",outcome=\"$o\"}" \
			"$([[ $o == "$2" ]] && echo 1 || echo 0)"
	done
	assert_metric "$S" "redlock_last_outcome_info{name=\"$1\",outcome=\"$2\"}" 1
	assert_metric "$S" "redlock_last_exit_status{name=\"$1\"}" "$3"
	assert_metric "$S" "redlock_running{name=\"$1\"}" 0
}

# assert_within SERIES LO HI: LO <= the value of SERIES <= HI.
assert_within() {
	local v
	v=$(mval "$S" "$1") || fail "no $1 in the scrape"
	awk -v v="$v" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		fail "$1 is $v, not within [$2, $3]"
}

# mfile NAME [DIR]: the one metrics file of NAME (default prefix, this
# file's server) in DIR (default $MDIR): redlock_NAME~ID.prom (or an
# older redlock's redlock_NAME.prom, so that a test can be run against
# it; the file names are checked by a test of their own).
mfile() {
	local f
	for f in "${2:-$MDIR}/redlock_$1~"????????????????.prom "${2:-$MDIR}/redlock_$1.prom"; do
		[[ -e $f ]] && { echo "$f"; return 0; }
	done
	echo "${2:-$MDIR}/redlock_$1~(none).prom"
	return 1
}

# secs MS: milliseconds as seconds with three decimals.
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

@test "a run that succeeds: ok, exit status 0, its start, end, success and duration" {
	local t0 t1
	t0=$(now_ms)
	run -0 redlock --metrics-dir "$MDIR" job sh -c 'sleep 0.3'
	t1=$(now_ms)
	[[ -f $(mfile job) ]]
	scraped
	assert_outcome job ok 0
	assert_within 'redlock_last_start_timestamp_seconds{name="job"}' "$(secs "$t0")" "$(secs "$t1")"
	assert_within 'redlock_last_end_timestamp_seconds{name="job"}' "$(secs "$t0")" "$(secs "$t1")"
	assert_within 'redlock_last_success_timestamp_seconds{name="job"}' "$(secs "$t0")" "$(secs "$t1")"
	assert_within 'redlock_last_duration_seconds{name="job"}' 0.3 5
	assert_within 'redlock_last_wait_seconds{name="job"}' 0 1
}

@test "a run that fails: failed, its exit status, and no success" {
	run -3 redlock --metrics-dir "$MDIR" job sh -c 'exit 3'
	scraped
	assert_outcome job failed 3
	assert_metric "$S" 'redlock_last_success_timestamp_seconds{name="job"}' 0
}

@test "a command that dies of a signal: signal, 128+N" {
	run -137 redlock --metrics-dir "$MDIR" job sh -c 'kill -KILL $$'
	scraped
	assert_outcome job signal 137
}

@test "a command that cannot be run: exec_failed, 127" {
	run -127 redlock --metrics-dir "$MDIR" job /nonexistent/command
	scraped
	assert_outcome job exec_failed 127
}

@test "-c whose shell cannot find or run the command: exec_failed, 127 or 126" {
	run -127 redlock --metrics-dir "$MDIR" nf -c 'nonexistent_command_zz'
	run -126 redlock --metrics-dir "$MDIR" nx -c /etc/passwd
	# A command that exits 127 by itself was run: failed.
	run -127 redlock --metrics-dir "$MDIR" own sh -c 'exit 127'
	scraped
	assert_outcome nf exec_failed 127
	assert_outcome nx exec_failed 126
	assert_outcome own failed 127
}

@test "a --once-per skip is busy, with or without -w, and its -E status" {
	run -0 redlock --once-per 1h --metrics-dir "$MDIR" job true
	run -0 redlock --once-per 1h --metrics-dir "$MDIR" job2 true
	rm "$MDIR"/*.prom
	run -0 redlock -E 0 -w 5s --once-per 1h --metrics-dir "$MDIR" job true
	run -7 redlock -E 7 --once-per 1h --metrics-dir "$MDIR" job2 true
	scraped
	assert_outcome job busy 0
	assert_outcome job2 busy 7
}

@test "-n finding the lock busy: busy, the -E status, and no start on this host" {
	hold_lock h job
	run -0 redlock -n -E 0 --metrics-dir "$MDIR" job true
	release_lock h
	scraped
	assert_outcome job busy 0
	assert_metric "$S" 'redlock_last_start_timestamp_seconds{name="job"}' 0
	assert_metric "$S" 'redlock_last_duration_seconds{name="job"}' 0
}

@test "-w running out: timeout, exit status 1, and the time it waited" {
	hold_lock h job
	run -1 redlock -w 400ms --metrics-dir "$MDIR" job true
	release_lock h
	scraped
	assert_outcome job timeout 1
	assert_within 'redlock_last_wait_seconds{name="job"}' 0.4 3
}

@test "Redis unreachable: unavailable, 69, in this host's metrics" {
	run -69 redlock -u "redis://127.0.0.1:$(dead_port)" --metrics-dir "$MDIR" job true
	scraped
	assert_outcome job unavailable 69
}

@test "the lock lost while the command runs: lost, 75" {
	bg_start h "$RL" -t 1s --metrics-dir "$MDIR" job sleep 30
	wait_for_key redlock:job
	rcli DEL redlock:job >/dev/null
	bg_wait h 20
	assert_equal "$BG_STATUS" 75
	scraped
	assert_outcome job lost 75
}

@test "--max-time running out: max_time, 124" {
	run -124 redlock --max-time 300ms --metrics-dir "$MDIR" job sleep 30
	scraped
	assert_outcome job max_time 124
	assert_within 'redlock_last_duration_seconds{name="job"}' 0.3 5
}

@test "a holder that redlock stop ends: stopped, the command's status" {
	bg_start h "$RL" -t 1s --metrics-dir "$MDIR" job sleep 30
	wait_for_key redlock:job
	run -0 redlock stop job
	bg_wait h 20
	assert_equal "$BG_STATUS" 143
	scraped
	assert_outcome job stopped 143
}

@test "redlock_running is 1 while the command runs, with its start, and 0 after" {
	local t0 t1
	t0=$(now_ms)
	hold_lock h --metrics-dir "$MDIR" job
	t1=$(now_ms)
	scraped
	assert_metric "$S" 'redlock_running{name="job"}' 1
	assert_within 'redlock_last_start_timestamp_seconds{name="job"}' "$(secs "$t0")" "$(secs "$t1")"
	release_lock h
	assert_equal "$BG_STATUS" 0
	scraped
	assert_outcome job ok 0
}

@test "redlock_running stays 1 while a command runs here, whatever another invocation for NAME here does; a holder that is gone is not counted" {
	hold_lock h --metrics-dir "$MDIR" job
	# A busy attempt, a wait that gives up: both write the file.
	run -1 redlock -n --metrics-dir "$MDIR" job true
	run -1 redlock -w 100ms --metrics-dir "$MDIR" job true
	scraped
	assert_metric "$S" 'redlock_running{name="job"}' 1
	assert_metric "$S" 'redlock_runs_total{name="job",outcome="busy"}' 1
	release_lock h
	scraped
	assert_metric "$S" 'redlock_running{name="job"}' 0
	# Two shared holders: the one that ends first leaves the other's 1.
	hold_lock s1 -s --metrics-dir "$MDIR" shr
	hold_lock s2 -s --metrics-dir "$MDIR" shr
	release_lock s1
	scraped
	assert_metric "$S" 'redlock_running{name="shr"}' 1
	# SIGKILLed, s2 writes nothing; the next write drops it.
	_kill_session "$(bg_pid s2)"
	wait_until -t 5 pid_dead "$(bg_pid s2)"
	redlock -s --metrics-dir "$MDIR" shr true
	scraped
	assert_metric "$S" 'redlock_running{name="shr"}' 0
}

@test "the counters by outcome are carried over from one file to the next" {
	redlock --metrics-dir "$MDIR" job true
	redlock --metrics-dir "$MDIR" job true
	run -4 redlock --metrics-dir "$MDIR" job sh -c 'exit 4'
	hold_lock h job
	run -1 redlock -n --metrics-dir "$MDIR" job true
	release_lock h
	redlock --metrics-dir "$MDIR" job true
	scraped
	assert_metric "$S" 'redlock_runs_total{name="job",outcome="ok"}' 3
	assert_metric "$S" 'redlock_runs_total{name="job",outcome="failed"}' 1
	assert_metric "$S" 'redlock_runs_total{name="job",outcome="busy"}' 1
	assert_metric "$S" 'redlock_last_outcome_info{name="job",outcome="ok"}' 1
	# The last start is the last run's, not the busy attempt's.
	assert_metric "$S" 'redlock_last_exit_status{name="job"}' 0
}

@test "REDLOCK_METRICS_DIR does what --metrics-dir does; without either nothing is written" {
	redlock job true
	run ls -A "$MDIR"
	assert_output ''
	REDLOCK_METRICS_DIR=$MDIR redlock job true
	[[ -f $(mfile job) ]]
}

@test "no line carries a timestamp, and every file has the same HELP and TYPE lines" {
	redlock --metrics-dir "$MDIR" one true
	run -2 redlock --metrics-dir "$MDIR" two sh -c 'exit 2'
	run awk '!/^#/ && NF != 2' "$(mfile one)" "$(mfile two)"
	assert_output ''
	assert_equal "$(grep '^#' "$(mfile one)")" "$(grep '^#' "$(mfile two)")"
	# Counters end in _total, the rest do not.
	run grep -E '^# TYPE ' "$(mfile one)"
	refute_output --regexp '_total (gauge|untyped)'
	refute_output --regexp '[^l] counter$'
}

@test "any NAME gives a safe file of its own and a correctly escaped label, no two NAMEs the same one" {
	local long names n f
	long=$(printf 'x%.0s' {1..150})
	names=('a b' 'a_b' 'quo"te' $'new\nline' 'back\slash' $'\xff\xferaw' 'dir/name'
		'..' "$long" "${long}y" 'ünïcødé' 'redlock_x~0123456789abcdef'
		'esc\x1b' $'esc\e' 'lf\n')
	for n in "${names[@]}"; do
		redlock --metrics-dir "$MDIR" run "$n" true || fail "redlock failed for '$n'"
	done
	# One file each, all in the directory itself, with safe names.
	run find "$MDIR" -mindepth 1
	assert_equal "${#lines[@]}" "${#names[@]}"
	for f in "$MDIR"/*; do
		[[ ${f##*/} =~ ^redlock_[A-Za-z0-9_.~-]+\.prom$ ]] || fail "unsafe file name: $f"
	done
	scraped
	assert_metric "$S" 'redlock_runs_total{name="a b",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="a_b",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="quo\"te",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="new\nline",outcome="ok"}' 1
	# A backslash is \x5c, as runs and status print it: "esc\x1b" is
	# not "esc" and ESC, nor "lf\n" "lf" and a line feed.
	assert_metric "$S" 'redlock_runs_total{name="back\\x5cslash",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="esc\\x5cx1b",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="esc\\x1b",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="lf\\x5cn",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="\\xff\\xferaw",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="dir/name",outcome="ok"}' 1
	assert_metric "$S" "redlock_runs_total{name=\"${long}y\",outcome=\"ok\"}" 1
	assert_metric "$S" 'redlock_runs_total{name="ünïcødé",outcome="ok"}' 1
	assert [ -f "$(mfile a_b)" ]
}

@test "the file redlock 0.3 kept for NAME goes when NAME's file is written, with its series; another NAME's stays" {
	local sha n
	# 0.3 keyed the file by NAME alone: redlock_NAME.prom for a plain
	# NAME, else its part, '~' and 16 hex digits of the SHA-1 of NAME;
	# its series had no prefix or servers label.
	sha=$(printf '%s' 'a b' | sha1sum)
	declare -A old=([job]=redlock_job.prom ['a b']="redlock_a_b~${sha:0:16}.prom"
		[other]=redlock_other.prom)
	for n in "${!old[@]}"; do
		printf '%s\n' '# HELP redlock_last_outcome_info The outcome of the last invocation for NAME on this host' \
			'# TYPE redlock_last_outcome_info gauge' \
			"redlock_last_outcome_info{name=\"$n\",outcome=\"failed\"} 1" \
			>"$MDIR/${old[$n]}"
	done
	redlock --metrics-dir "$MDIR" job true
	redlock --metrics-dir "$MDIR" 'a b' true
	assert [ ! -e "$MDIR/${old[job]}" ]
	assert [ ! -e "$MDIR/${old['a b']}" ]
	assert [ -f "$MDIR/${old[other]}" ]
	scraped
	run grep '^redlock_last_outcome_info{.*outcome="failed"' "$S"
	assert_output 'redlock_last_outcome_info{name="other",outcome="failed"} 1'
	assert_metric "$S" 'redlock_runs_total{name="job",outcome="ok"}' 1
	assert_metric "$S" 'redlock_runs_total{name="a b",outcome="ok"}' 1
}

@test "a missing metrics directory is one warning; the run and its status are unchanged" {
	run -3 --separate-stderr redlock --metrics-dir "$BATS_TEST_TMPDIR/none" job sh -c 'echo ran; exit 3'
	assert_output ran
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: cannot write the metrics of lock 'job' to '.*/none': No such file or directory$"
	run -0 --separate-stderr redlock -q --metrics-dir "$BATS_TEST_TMPDIR/none" job true
	assert_equal "$stderr" ''
}

# mount_tmpfs DIR OPTIONS: a tmpfs at DIR (root only); skips otherwise.
mount_tmpfs() {
	mkdir -p "$1"
	if [[ $(id -u) != 0 ]] || ! mount -t tmpfs -o "$2" tmpfs "$1" 2>/dev/null; then
		skip "cannot mount a tmpfs here"
	fi
}

@test "a read-only metrics directory is one warning; the run and its status are unchanged" {
	local d=$BATS_TEST_TMPDIR/mnt-ro
	if [[ $(id -u) == 0 ]]; then
		mount_tmpfs "$d" ro,size=64k
	else
		mkdir -p "$d" && chmod 555 "$d"
	fi
	run -0 --separate-stderr redlock --metrics-dir "$d" job sh -c 'echo ran'
	assert_output ran
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: cannot write the metrics of lock 'job' to '$d': (Read-only file system|Permission denied)$"
}

@test "a full metrics directory is one warning, leaves no temporary file, and keeps the old file" {
	local d=$BATS_TEST_TMPDIR/mnt-full
	mount_tmpfs "$d" size=16k
	redlock --metrics-dir "$d" job true
	cp "$(mfile job "$d")" "$BATS_TEST_TMPDIR/before"
	dd if=/dev/zero of="$d/filler" bs=1k count=64 2>/dev/null || true
	run -5 --separate-stderr redlock --metrics-dir "$d" job sh -c 'exit 5'
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^redlock: cannot write the metrics of lock 'job' to '$d': No space left on device$"
	run ls -A "$d"
	assert_output --regexp $'^filler\nredlock_job~[0-9a-f]{16}\\.prom$'
	cmp "$(mfile job "$d")" "$BATS_TEST_TMPDIR/before"
}

# file_whole F: F is absent or a whole file of ours: it ends with a line
# end and has the ten counter lines and the last family's header.
file_whole() {
	local text
	text=$(cat "$1" 2>/dev/null; echo x) || return 0
	[[ $text == x ]] && return 0
	[[ ${text: -2} == $'\nx' ]] || return 1
	[[ $(grep -c '^redlock_runs_total{' <<<"$text") == 10 ]]
}

@test "fifty concurrent runs of one NAME never show a torn file, and every one is counted" {
	local i alive n=0 torn=0 errs=0 go=$BATS_TEST_TMPDIR/go gate
	# Half give up at once, half wait their turn; all start together:
	# each waits in open(2) of the FIFO "go" until the test opens it
	# (fifty shells polling for a file kept two processors busy, and the
	# looks below then came too rarely).
	mkfifo "$go"
	for i in $(seq 50); do
		bg_start "r$i" /bin/sh -c ': <"$1"; shift; exec "$@"' sh "$go" \
			"$RL" -w "$((i % 2 ? 0 : 20))" \
			--metrics-dir "$MDIR" job sh -c 'sleep 0.1'
	done
	# Read-write: it never blocks, and while it is open every opener of
	# the FIFO goes on at once.
	exec {gate}<>"$go"
	while ((n < 3000)); do
		n=$((n + 1))
		alive=0
		for i in $(seq 50); do
			pid_alive "$(bg_pid "r$i")" && { alive=1; break; }
		done
		file_whole "$(mfile job)" || torn=$((torn + 1))
		scrape "$S" && [[ $(mval "$S" node_textfile_scrape_error) == 0 ]] || errs=$((errs + 1))
		((alive)) || break
	done
	for i in $(seq 50); do
		bg_wait "r$i" 30
		[[ $BG_STATUS == 0 || $BG_STATUS == 1 ]] || fail "run $i exited $BG_STATUS"
	done
	exec {gate}>&-
	assert_equal "$torn" 0
	assert_equal "$errs" 0
	((n > 5)) || fail "only $n looks while the runs went on"
	scraped
	local ok busy
	ok=$(mval "$S" 'redlock_runs_total{name="job",outcome="ok"}')
	busy=$(mval "$S" 'redlock_runs_total{name="job",outcome="busy"}')
	assert_equal "$((ok + busy))" 50
	((ok >= 25)) || fail "only $ok runs got the lock"
	assert_metric "$S" 'redlock_running{name="job"}' 0
	run ls -A "$MDIR"
	assert_output --regexp '^redlock_job~[0-9a-f]{16}\.prom$'
}

@test "a FIFO at the metrics file is one warning: the run renews its lock and ends with its status" {
	local f d=$BATS_TEST_TMPDIR
	redlock --metrics-dir "$MDIR" job true
	f=$(mfile job)
	rm "$f"
	mkfifo "$f"
	# A 1 s lease and a 2.5 s command: it ends with its own status only
	# if the lease was renewed (else the guard ends it after one TTL).
	# 30 s bounds a redlock that blocks on the FIFO, generously.
	run -3 --separate-stderr timeout -s KILL 30 "$RL" -t 1s \
		--metrics-dir "$MDIR" job sh -c 'sleep 2.5; exit 3'
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: cannot write the metrics of lock 'job' to '$MDIR': redlock_job~[0-9a-f]{16}\.prom is not a regular file$"
	# The FIFO is left alone, and nothing else was written.
	assert [ -p "$f" ]
	run ls -A "$MDIR"
	assert_output "${f##*/}"
	# The metrics directory itself a FIFO: one warning, nothing else.
	mkfifo "$d/fifo-dir"
	run -4 --separate-stderr timeout -s KILL 30 "$RL" \
		--metrics-dir "$d/fifo-dir" job sh -c 'exit 4'
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: cannot write the metrics of lock 'job' to '.*/fifo-dir': Not a directory$"
}

@test "a FIFO at the metrics file does not keep SIGTERM from ending redlock" {
	local f d=$BATS_TEST_TMPDIR
	redlock --metrics-dir "$MDIR" job true
	f=$(mfile job)
	rm "$f"
	mkfifo "$f"
	bg_start r "$RL" -t 2s --metrics-dir "$MDIR" job sh -c ': >"$1"; exec sleep 60' sh "$d/started"
	wait_for_file "$d/started" 20
	# Past the start's metrics write, which comes right after the spawn
	# and warns (a redlock that blocks there never does: then on after
	# the bound, to see whether SIGTERM still ends it).
	wait_until -t 10 eval '[[ -s $BATS_TEST_TMPDIR/r.err ]]' || true
	kill -TERM "$BG_PID"
	# Generous on a loaded machine; a redlock stuck in open() never ends.
	bg_wait r 15 || fail "SIGTERM did not end redlock: $(bg_err r)"
	assert_equal "$BG_STATUS" 143
	assert_equal "$(rcli EXISTS redlock:job)" 0
	[[ $(grep -c . "$d/r.err") == 1 ]] || fail "not one warning: $(bg_err r)"
}

# redlock-monitoring(7): nothing a metrics write does keeps a signal from
# ending redlock.  The end's write waits up to 5 s for another writer of
# the directory; a SIGTERM then was lost (exit 0 after the wait).
@test "SIGTERM while the end of a run waits for another writer of the metrics directory ends redlock at once: 143" {
	local d=$BATS_TEST_TMPDIR
	bg_start dirlock flock "$MDIR" sh -c ': >"$1"; exec sleep 60' sh "$d/dirlocked"
	wait_for_file "$d/dirlocked"
	bg_start r "$RL" --metrics-dir "$MDIR" job sh -c ': >"$1"' sh "$d/ran"
	wait_for_file "$d/ran" 20
	# Released: redlock is at the end's metrics write, or about to be.
	wait_for_no_key redlock:job 20
	local t0
	t0=$(now_ms)
	kill -TERM "$BG_PID"
	bg_wait r 15 || fail "SIGTERM did not end redlock: $(bg_err r)"
	assert_equal "$BG_STATUS" 143
	(($(now_ms) - t0 < $(scale_ms 3000))) || fail "took $(($(now_ms) - t0)) ms"
}

@test "the same NAME under another prefix or on another server has a file and series of its own" {
	local other
	start_redis other
	other=unix://$(redis_sock other)
	run -0 redlock --metrics-dir "$MDIR" job true
	run -0 redlock --metrics-dir "$MDIR" -p team: job true
	run -3 redlock --metrics-dir "$MDIR" -u "$other" job sh -c 'exit 3'
	run -0 redlock --metrics-dir "$MDIR" -u "$other" job true
	run ls -A "$MDIR"
	assert_equal "${#lines[@]}" 3
	for f in "${lines[@]}"; do
		[[ $f =~ ^redlock_job~[0-9a-f]{16}\.prom$ ]] || fail "file name: $f"
	done
	scraped
	assert_metric "$S" "redlock_runs_total{name=\"job\",outcome=\"ok\",prefix=\"redlock:\",servers=\"$REDIS_SOCK\"}" 1
	assert_metric "$S" "redlock_runs_total{name=\"job\",outcome=\"ok\",prefix=\"team:\",servers=\"$REDIS_SOCK\"}" 1
	assert_metric "$S" "redlock_runs_total{name=\"job\",outcome=\"ok\",prefix=\"redlock:\",servers=\"$(redis_sock other)\"}" 1
	assert_metric "$S" "redlock_runs_total{name=\"job\",outcome=\"failed\",prefix=\"redlock:\",servers=\"$(redis_sock other)\"}" 1
	assert_metric "$S" "redlock_runs_total{name=\"job\",outcome=\"failed\",prefix=\"redlock:\",servers=\"$REDIS_SOCK\"}" 0
	# A quorum's servers in any order are one set: one file.
	rm "$MDIR"/*.prom
	run -0 redlock --metrics-dir "$MDIR" -u "$REDLOCK_URL" -u "$other" -u "unix://$BATS_TEST_TMPDIR/none" job true
	run -0 redlock --metrics-dir "$MDIR" -u "unix://$BATS_TEST_TMPDIR/none" -u "$other" -u "$REDLOCK_URL" job true
	run ls -A "$MDIR"
	assert_equal "${#lines[@]}" 1
	stop_redis other
}
