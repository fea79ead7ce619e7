#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Die the way the command died (redlock(1), EXIT STATUS): when the command was
# killed by signal N and redlock has no status of its own to report (not
# 75, not 124), redlock releases the lock and then dies of N itself,
# without a core dump, so that its caller sees what it would see without
# redlock: a shell's $? is still 128+N, a parent's wait status says
# "killed by N", and a script's loop stops on Ctrl-C as it does with
# flock(1).

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	# wstatus CMD...: runs CMD with every signal at its default and
	# prints how it ended: "exit N", or "signal N" plus " core" when it
	# dumped core.
	export WSTATUS=$BATS_FILE_TMPDIR/wstatus
	cat >"$WSTATUS" <<'EOF'
#!/usr/bin/python3
import os, signal, sys
pid = os.fork()
if pid == 0:
    for s in range(1, signal.NSIG):
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    os.execvp(sys.argv[1], sys.argv[1:])
_, st = os.waitpid(pid, 0)
if os.WIFSIGNALED(st):
    print("signal %d%s" % (os.WTERMSIG(st), " core" if os.WCOREDUMP(st) else ""))
else:
    print("exit %d" % os.WEXITSTATUS(st))
EOF
	# ctrl_c_loop MARKER TOOL...: runs a bash script whose for loop runs
	# `TOOL sh -c ...` for a, b and c, in a process group of its own
	# with every signal at its default; once the first iteration's
	# command runs, sends SIGINT to the whole group (what Ctrl-C does).
	# Prints the items the loop started and how bash ended, or
	# "continued" as soon as the second iteration's command runs (then
	# kills the group).
	export CTRL_C_LOOP=$BATS_FILE_TMPDIR/ctrl_c_loop
	cat >"$CTRL_C_LOOP" <<'EOF'
#!/usr/bin/python3
import os, signal, subprocess, sys, time
m = sys.argv[1]
tool = sys.argv[2:]
script = '''for i in a b c; do
	echo "$i" >>"$M.iters"
	"$@" sh -c ': >"$M.$1"; sleep 5' sh "$i"
done
echo after >>"$M.iters"'''
def child():
    for s in range(1, signal.NSIG):
        try:
            signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    os.setpgid(0, 0)
env = dict(os.environ, M=m)
p = subprocess.Popen(["bash", "-c", script, "loop"] + tool, preexec_fn=child, env=env)
def wait_for(path, secs):
    end = time.time() + secs
    while time.time() < end:
        if os.path.exists(path):
            return True
        if p.poll() is not None:
            return False
        time.sleep(0.02)
    return False
if not wait_for(m + ".a", 20):
    os.killpg(p.pid, signal.SIGKILL)
    print("never started")
    sys.exit(0)
os.killpg(p.pid, signal.SIGINT)
if wait_for(m + ".b", 10):
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    print("continued")
    sys.exit(0)
rc = p.wait()
iters = open(m + ".iters").read().split()
print(" ".join(iters), "signal %d" % -rc if rc < 0 else "exit %d" % rc)
EOF
	chmod +x "$WSTATUS" "$CTRL_C_LOOP"
}

# ended CMD...: how CMD ended, as wstatus prints it (in $output).
ended() {
	run -0 --separate-stderr "$WSTATUS" "$@"
}

@test "the command killed by SIGTERM: redlock releases the lock, then dies of SIGTERM itself" {
	ended "$RL" term sh -c 'kill -TERM $$'
	assert_output 'signal 15'
	assert key_absent redlock:term
	assert_equal "$(rcli --scan --pattern '*holder' | wc -l)" 0
}

@test "the command killed by SIGINT: redlock dies of SIGINT" {
	ended "$RL" int sh -c 'kill -INT $$'
	assert_output 'signal 2'
	assert key_absent redlock:int
}

@test "the command killed by SIGHUP: redlock dies of SIGHUP" {
	ended "$RL" hup sh -c 'kill -HUP $$'
	assert_output 'signal 1'
	assert key_absent redlock:hup
}

@test "the command killed by SIGKILL: redlock dies of SIGKILL" {
	ended "$RL" kill sh -c 'kill -KILL $$'
	assert_output 'signal 9'
	assert key_absent redlock:kill
}

@test "the command killed by SIGQUIT: redlock dies of SIGQUIT without dumping core" {
	local d=$BATS_TEST_TMPDIR/cwd
	mkdir -p "$d"
	# Core dumps allowed for redlock; the command itself never dumps one.
	run -0 bash -c 'cd "$1" && ulimit -c unlimited 2>/dev/null; shift; exec "$@"' sh "$d" \
		"$WSTATUS" "$RL" quit sh -c 'ulimit -c 0; kill -QUIT $$'
	assert_output 'signal 3'
	assert key_absent redlock:quit
	run ls -A "$d"
	assert_output ''
}

@test "a forwarded SIGTERM that kills the command makes redlock die of SIGTERM after releasing" {
	local d=$BATS_TEST_TMPDIR
	"$WSTATUS" "$RL" fwd sh -c 'echo $PPID >"$1"; exec sleep 30' sh "$d/rl.pid" \
		>"$d/how" 3>&- &
	local w=$!
	wait_for_file "$d/rl.pid" 20
	wait_until -t 10 test -s "$d/rl.pid"
	kill -TERM "$(cat "$d/rl.pid")"
	wait_until -t 15 pid_dead "$w"
	wait "$w"
	assert_equal "$(cat "$d/how")" 'signal 15'
	assert key_absent redlock:fwd
}

@test "a shell that runs redlock still sees \$? = 143 when the command died of SIGTERM" {
	run -0 "$WSTATUS" bash -c '"$1" term143 sh -c "kill -TERM \$\$"; echo "rc=$?"' sh "$RL"
	assert_line 'rc=143'
	assert_line 'exit 0'
	assert key_absent redlock:term143
}

@test "a command that exits 130 without a signal: redlock exits 130, it does not kill itself" {
	ended "$RL" plain130 sh -c 'exit 130'
	assert_output 'exit 130'
}

@test "a lost lock stays exit status 75 although the command died of the SIGTERM redlock sent" {
	local d=$BATS_TEST_TMPDIR
	"$WSTATUS" "$RL" -t 600ms lost sh -c ': >"$1"; exec sleep 30' sh "$d/held" \
		>"$d/how" 3>&- &
	local w=$!
	wait_for_file "$d/held" 20
	run -0 redlock break lost
	wait_until -t 15 pid_dead "$w"
	wait "$w"
	assert_equal "$(cat "$d/how")" 'exit 75'
}

@test "--max-time stays exit status 124 although the command died of the SIGTERM redlock sent" {
	ended "$RL" --max-time 300ms maxt sleep 30
	assert_output 'exit 124'
	assert key_absent redlock:maxt
}

@test "harness: Ctrl-C to a script's process group stops its for loop with flock, and bash dies of SIGINT" {
	run -0 "$CTRL_C_LOOP" "$BATS_TEST_TMPDIR/m" flock "$BATS_TEST_TMPDIR/lockfile"
	assert_output 'a signal 2'
}

@test "Ctrl-C to a script's process group stops its for loop after the first redlock, as with flock" {
	run -0 "$CTRL_C_LOOP" "$BATS_TEST_TMPDIR/m" "$RL" loop
	assert_output 'a signal 2'
	assert key_absent redlock:loop
}

# A command that kills itself with SIGINT, the shell not having had one:
# bash goes on with the loop (it takes the command to have handled it).
# flock and redlock must not change that.
@test "a command that kills itself with SIGINT does not stop the calling script's loop, as with flock" {
	local loop='for i in a b c; do "$@" sh -c "kill -INT \$\$"; echo "$i=$?"; done; echo after'
	run -0 "$WSTATUS" bash -c "$loop" loop flock "$BATS_TEST_TMPDIR/lockfile"
	local want=$output
	assert_equal "$want" $'a=130\nb=130\nc=130\nafter\nexit 0'
	run -0 "$WSTATUS" bash -c "$loop" loop "$RL" selfint
	assert_output "$want"
	assert key_absent redlock:selfint
}

@test "a parent's wait status says the command's signal, and a shell's \$? is 128+N, with the lock released" {
	run -0 python3 -c '
import subprocess, sys
p = subprocess.run([sys.argv[1], "die", "sh", "-c", "kill -TERM $$"])
print(p.returncode)' "$RL"
	assert_output -- -15
	assert key_absent redlock:die
	run bash -c '"$RL" die sh -c "kill -TERM \$\$"; echo "status=$?"'
	assert_output --partial 'status=143'
}

@test "-q --max-time 200ms on sleep 5: a parent's wait status is exit 124, not a signal" {
	run -0 python3 -c '
import subprocess, sys
p = subprocess.run([sys.argv[1], "-q", "--max-time", "200ms", "mt", "sleep", "5"])
print(p.returncode)' "$RL"
	assert_output 124
}
