#!/bin/bash
# shellcheck disable=SC2015,SC2016 # ok() never fails; $ in quotes is for the inner shell
#
# Inside a Debian root booted with systemd-nspawn -b (tests/package/run.sh),
# as a oneshot unit: redlock under a real systemd.  Writes its report to
# /root/systemd-check.log and PASS or FAIL to /root/result; the unit then
# powers the container off.
#
#   - a Type=notify unit that waits for a held lock: StatusText names the
#     holder, the unit stays activating past a start timeout shorter than
#     the wait, and becomes active only after the holder releases
#   - a command under redlock does not get NOTIFY_SOCKET
#   - the package made /etc/redlock/jobs; the shipped units pass
#     systemd-analyze verify, and systemd-analyze security rates the job
#     unit under 6.0; the timer fires, the job runs once in its sandbox,
#     a skipped tick is not a failure and leaves a line in the journal, as
#     does a tick that finds the lock busy; a job that hangs is stopped at
#     the unit's start timeout and its lock released

exec >/root/systemd-check.log 2>&1
: >/root/booted
fails=0
ok() { echo "ok - $*"; }
bad() {
	echo "not ok - $*"
	fails=$((fails + 1))
}
# wait_for SECONDS CMD...: poll CMD every 0.1 s, at most SECONDS.
wait_for() {
	local n=$(($1 * 10)) i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}
prop() { systemctl show -P "$2" "$1"; }
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

redis_up() { [[ $(redis-cli PING 2>/dev/null) == PONG ]]; }
wait_for 30 redis_up && ok "the packaged redis-server answers" || bad "redis-server does not answer"

# --- a waiting Type=notify unit ---------------------------------------------

systemd-run --quiet --unit=holder redlock pc-wait \
	sh -c 'while [ ! -e /run/release ]; do sleep 0.1; done'
wait_for 10 redlock -q status pc-wait >/dev/null || bad "the holder does not hold pc-wait"
hpid=$(prop holder.service MainPID)

t0=$SECONDS
systemd-run --wait -p Type=notify -p TimeoutStartSec=3s --unit=waiter \
	redlock -w 30s pc-wait true >/root/waiter.out 2>&1 &
run_pid=$!
says_holder() { [[ $(prop waiter.service StatusText) == *"held by"* ]]; }
wait_for 10 says_holder
status=$(prop waiter.service StatusText)
echo "StatusText=$status" >/root/statustext
echo "# StatusText=$status"
[[ $status == "waiting for lock 'pc-wait': held by root@$(hostname) pid $hpid since "*Z ]] &&
	ok "StatusText names the lock and its holder (host, pid, since)" ||
	bad "StatusText is '$status'"
[[ $(prop waiter.service ActiveState) == activating ]] &&
	ok "the waiting unit is activating" || bad "the waiting unit is $(prop waiter.service ActiveState)"
# Past TimeoutStartSec=3s: EXTEND_TIMEOUT_USEC keeps it alive.
still=1
while ((SECONDS - t0 < 7)); do
	[[ $(prop waiter.service ActiveState) == activating ]] || still=0
	sleep 0.2
done
((still)) && ok "still activating 7 s into a wait, with TimeoutStartSec=3s" ||
	bad "the waiting unit left activating before the release: $(prop waiter.service ActiveState) $(prop waiter.service Result)"

released=$(now_us)
touch /run/release
if wait "$run_pid"; then
	ok "systemd-run --wait: the unit succeeded"
else
	bad "systemd-run --wait failed: $(tr '\n' ' ' </root/waiter.out)"
fi
cat /root/waiter.out
started=$(journalctl -q -o short-unix -u waiter.service --no-pager | awk '/Started/ { print $1; exit }')
echo "# released at ${released}us; 'Started' logged at ${started:-never}s"
if [[ -n $started ]] && (( ${started/./} >= released )); then
	ok "the unit became active only after the holder released"
else
	bad "the unit became active before the release (or never)"
fi

# --- the command's own notifications ------------------------------------------

systemd-run --wait --quiet -p Type=notify -p NotifyAccess=all redlock pc-cmd \
	sh -c 'test -z "${NOTIFY_SOCKET:-}"' &&
	ok "the command runs without NOTIFY_SOCKET" ||
	bad "the command got NOTIFY_SOCKET"

# --- the shipped units -------------------------------------------------------------

# The steps of SYSTEMD in redlock-scheduling(7), as a user on a fresh install.
[[ -d /etc/redlock/jobs ]] && ok "the package made /etc/redlock/jobs" ||
	bad "no /etc/redlock/jobs after installing the package"
mkdir -p /etc/redlock/jobs
# The job also tries to write under /etc, which its sandbox forbids.
printf '#!/bin/sh\necho "$(date +%%s) $$" >>/var/lib/tick.log\ntouch /etc/tick-probe 2>/dev/null\nexit 0\n' >/root/tick.sh
install -m 755 /root/tick.sh /etc/redlock/jobs/tick ||
	bad "install -m 755 tick.sh /etc/redlock/jobs/tick failed"
out=$(systemd-analyze verify redlock-job@tick.service redlock-job@tick.timer 2>&1)
[[ -z $out ]] && ok "systemd-analyze verify is clean" || bad "systemd-analyze verify: $out"
if out=$(systemd-analyze security --threshold=60 --no-pager redlock-job@tick.service 2>&1); then
	ok "systemd-analyze security: $(grep -o 'Overall exposure level.*' <<<"$out")"
else
	bad "systemd-analyze security rates the job unit over 6.0: $(tail -n 1 <<<"$out")"
fi

# A tick missed two hours ago (Persistent=true) fires as the timer starts,
# once the randomized delay is taken out (it would be up to 5 minutes).
mkdir -p /etc/systemd/system/redlock-job@tick.timer.d /var/lib/systemd/timers
printf '[Timer]\nRandomizedDelaySec=0\n' >/etc/systemd/system/redlock-job@tick.timer.d/now.conf
systemctl daemon-reload
touch -d '-2 hours' /var/lib/systemd/timers/stamp-redlock-job@tick.timer
systemctl start redlock-job@tick.timer
job_done() {
	[[ -s /var/lib/tick.log && $(prop redlock-job@tick.service ActiveState) == inactive ]]
}
if wait_for 30 job_done; then
	ok "the timer fired and the job ran"
else
	bad "the timer did not run the job: $(systemctl status redlock-job@tick.timer redlock-job@tick.service --no-pager)"
fi
[[ $(prop redlock-job@tick.service Result) == success ]] || bad "the job's result is $(prop redlock-job@tick.service Result)"
[[ -e /etc/tick-probe ]] && bad "the job wrote under /etc (ProtectSystem=full)" ||
	ok "the job ran sandboxed: it could not write under /etc"
# Another host's tick in the same hour skips (--once-per 1h): status
# 100, not a failure.  (A tick that crossed into the next hour would run
# the job again: then the one after it must skip.)
hour=$(date -u +%Y%m%d%H) runs=1
systemctl start redlock-job@tick.service || bad "systemctl start of a skipped tick failed"
if [[ $(date -u +%Y%m%d%H) != "$hour" ]]; then
	echo "# the hour changed: that tick ran the job again; the next skips"
	runs=2
	systemctl start redlock-job@tick.service
fi
[[ $(prop redlock-job@tick.service ExecMainStatus) == 100 &&
	$(prop redlock-job@tick.service Result) == success ]] &&
	ok "a skipped tick exits 100 and the unit is not failed" ||
	bad "a skipped tick: status $(prop redlock-job@tick.service ExecMainStatus), result $(prop redlock-job@tick.service Result)"
[[ $(wc -l </var/lib/tick.log) == "$runs" ]] && ok "the job ran once" ||
	bad "the job ran $(wc -l </var/lib/tick.log) times"
journal() { journalctl -q -o cat -u "$1" --no-pager; }
in_journal() { journal "$1" | grep -q -- "$2"; }
wait_for 10 in_journal redlock-job@tick.service "skipping the command" &&
	ok "the skipped tick left a line in the journal" ||
	bad "no line for the skipped tick in the journal: $(journal redlock-job@tick.service | tr '\n' '|')"

# A tick while another host runs the job: a skip, and a line that says so.
systemd-run --quiet --unit=tick-holder redlock tick \
	sh -c 'while [ ! -e /run/release-tick ]; do sleep 0.1; done'
wait_for 10 redlock -q status tick >/dev/null || bad "the holder does not hold tick"
systemctl start redlock-job@tick.service || bad "systemctl start of a busy tick failed"
[[ $(prop redlock-job@tick.service ExecMainStatus) == 100 ]] ||
	bad "a busy tick: status $(prop redlock-job@tick.service ExecMainStatus)"
wait_for 10 in_journal redlock-job@tick.service "is held by someone else" &&
	ok "a tick that found the lock busy left a line in the journal" ||
	bad "no line for the busy tick in the journal: $(journal redlock-job@tick.service | tr '\n' '|')"
touch /run/release-tick

# A job that hangs is stopped at TimeoutStartSec= (here 3 s) and its lock
# released, so that the next tick can run it.
printf '#!/bin/sh\nwhile :; do sleep 1; done\n' >/root/hang.sh
install -m 755 /root/hang.sh /etc/redlock/jobs/hang
[[ $(prop redlock-job@hang.service TimeoutStartUSec) == 50min ]] &&
	ok "the job unit's start timeout is 50min" ||
	bad "the job unit's start timeout is $(prop redlock-job@hang.service TimeoutStartUSec)"
mkdir -p /etc/systemd/system/redlock-job@hang.service.d
printf '[Service]\nTimeoutStartSec=3s\n' >/etc/systemd/system/redlock-job@hang.service.d/short.conf
systemctl daemon-reload
t0=$SECONDS
systemctl start redlock-job@hang.service && bad "a job that hangs: systemctl start succeeded"
echo "# the hung job's start returned after $((SECONDS - t0)) s"
[[ $(prop redlock-job@hang.service Result) == timeout ]] &&
	ok "a job that hangs fails the unit with Result=timeout" ||
	bad "a job that hangs: result $(prop redlock-job@hang.service Result)"
redlock -q status hang >/dev/null
[[ $? == 1 ]] && ok "the hung job's lock was released" || bad "the hung job's lock is still held"
wait_for 10 in_journal redlock-job@hang.service "released lock 'hang'" &&
	ok "the journal says the hung job's lock was released" ||
	bad "the journal of the hung job: $(journal redlock-job@hang.service | tr '\n' '|')"

if ((fails)); then
	echo "systemd: FAIL ($fails)"
	echo FAIL >/root/result
else
	echo "systemd: PASS"
	echo PASS >/root/result
fi
