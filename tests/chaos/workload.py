#!/usr/bin/python3
"""The chaos harness's critical section and clock (tests/chaos/chaos.sh).

    workload.py section HOST DIR HOLD_MS   redlock's command on a host
    workload.py stamp FILE WORD...         append "T WORD..." to FILE

T is CLOCK_MONOTONIC in nanoseconds, which every network namespace of the
machine shares, so the lines of all hosts are on one time line.  Both are
run with libfaketime taken out of the environment (see chaos.sh): a host
whose clock is skewed still writes true times.

A section is a holder writing to the fenced store DIR/store.*: every write
takes DIR/store.lock (flock), compares $REDLOCK_FENCE with the largest
fence the store has accepted (DIR/store.max), accepts it if it is not
lower, and appends "T HOST PID FENCE KIND accepted|rejected" to
DIR/store.log.  The first write ("begin") marks the start of the section,
one "tick" follows every TICK_S while HOLD_MS lasts, and "end" (or "term"
when SIGTERM came first) marks its end; a rejected write does not end the
section, as a client of a resource that refuses it would carry on.  While
it runs, DIR/in.HOST holds its fence, for the harness to find the holder.
Standard library only.
"""

import fcntl
import os
import signal
import sys
import time

# A write every 100 ms: a stale holder's writes land within 0.1 s of when
# it became stale, which is finer than any lease the scenarios use.
TICK_S = 0.1


def now_ns():
    return time.monotonic_ns()


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def store_write(d, host, fence, kind):
    """One fenced write; returns True if the store accepted it."""
    with open(os.path.join(d, "store.lock"), "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            with open(os.path.join(d, "store.max")) as f:
                top = int(f.read() or "-1")
        except FileNotFoundError:
            top = -1
        ok = fence >= top
        if ok and fence > top:
            with open(os.path.join(d, "store.max.tmp"), "w") as f:
                f.write("%d" % fence)
            os.rename(os.path.join(d, "store.max.tmp"), os.path.join(d, "store.max"))
        append(os.path.join(d, "store.log"), "%d %s %d %d %s %s" % (
            now_ns(), host, os.getpid(), fence, kind, "accepted" if ok else "rejected"))
        return ok


def section(host, d, hold_ms):
    fence = int(os.environ.get("REDLOCK_FENCE", "-1"))
    marker = os.path.join(d, "in." + host)

    def on_term(signum, frame):
        append(os.path.join(d, "store.log"), "%d %s %d %d term -" % (
            now_ns(), host, os.getpid(), fence))
        try:
            os.unlink(marker)
        except FileNotFoundError:
            pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    store_write(d, host, fence, "begin")
    with open(marker, "w") as f:
        f.write("%d %d\n" % (fence, os.getpid()))
    deadline = time.monotonic() + hold_ms / 1000.0
    while time.monotonic() < deadline:
        time.sleep(min(TICK_S, max(0.0, deadline - time.monotonic())))
        store_write(d, host, fence, "tick")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.unlink(marker)
    except FileNotFoundError:
        pass
    append(os.path.join(d, "store.log"), "%d %s %d %d end -" % (
        now_ns(), host, os.getpid(), fence))


def main(argv):
    if len(argv) >= 5 and argv[1] == "section":
        section(argv[2], argv[3], int(argv[4]))
        return 0
    if len(argv) >= 3 and argv[1] == "stamp":
        append(argv[2], " ".join([str(now_ns())] + argv[3:]))
        return 0
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
