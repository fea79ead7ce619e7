#!/usr/bin/python3
"""The chaos harness's checker: reads one scenario's history and judges it.

    check.py DIR NAME [--limit N] [--admit RULE]... [--window MS]

DIR holds the history of the scenario (tests/chaos/workload.py and
tests/chaos/chaos.sh write it; every time is CLOCK_MONOTONIC in ns):

    store.log   T HOST PID FENCE begin|tick accepted|rejected
                T HOST PID FENCE end|term -
    runs.log    T run-end HOST STATUS        one per redlock run
    events.log  T KIND TARGET start|end      each fault, and its healing

A section is a holder's critical section, from its "begin" write to its
"end"/"term" line, or to the end of its redlock run when it was killed.
Two sections of different holders that share an instant are an overlap
(with --limit N: more than N sections at an instant).  A write is stale
when a section that started after the writer's began before the write:
the store must have refused it (stale writes accepted must be 0 in every
scenario, whatever else happened).  The scenario passes when there is no
overlap, or each overlap is one an --admit RULE allows, as the man page
admits it (redlock-protocol(7), FAILURE MODEL):

    paused      one holder had been frozen (a "pause" event on its host
                began during its section), and its run ended with 75
    drift=HOST  one holder is HOST, whose clock runs at another rate than
                the 1% the lease allows for (it does not notice: its command
                runs on past the lease, and only the fence stops its writes)
    forget=MS   the later holder started after a server "restart" event,
                the overlap lasted at most MS (the old holder's next
                renewal, a third of the TTL, plus its --kill-after), and
                the old holder's run ended with 75

Prints the details, then one summary line, "row<TAB>..." (see ROW), for
chaos.sh's table; exits 0 if the scenario passed, 1 if not.
"""

import collections
import sys

ROW = ("scenario", "runs", "grants", "overlaps", "admitted", "stale_rej",
       "stale_acc", "exits", "unavail_s", "result")

# Unavailability after a fault is measured up to this long after it
# healed (or after it began, for a fault with no end): long enough for a
# lease to run out and a waiter to take the lock over.
DEFAULT_WINDOW_MS = 8000


def read_lines(path):
    try:
        with open(path) as f:
            return [ln.split() for ln in f if ln.strip()]
    except FileNotFoundError:
        return []


class Section:
    def __init__(self, host, pid, fence, start):
        self.host, self.pid, self.fence = host, pid, fence
        self.start, self.end = start, None
        self.writes = []  # (t, accepted)
        self.status = None  # the exit status of its redlock run

    def label(self):
        return "%s(fence %d)" % (self.host, self.fence)


def load(d):
    sections = {}
    for f in read_lines(d + "/store.log"):
        t, host, pid, fence, kind = int(f[0]), f[1], f[2], int(f[3]), f[4]
        key = (host, pid)
        if kind == "begin":
            sections[key] = Section(host, pid, fence, t)
        s = sections.get(key)
        if s is None:
            continue
        if kind in ("begin", "tick"):
            s.writes.append((t, f[5] == "accepted"))
        else:
            s.end = t
    runs = [(int(f[0]), f[2], int(f[3])) for f in read_lines(d + "/runs.log")]
    runs.sort()
    for s in sections.values():
        # The run that held it is the host's first to end after it began.
        for t, host, st in runs:
            if host == s.host and t >= s.start:
                s.status = st
                if s.end is None:
                    s.end = t
                break
        if s.end is None:  # still running when the history was taken
            s.end = max([w[0] for w in s.writes] + [s.start])
    events = [(int(f[0]), f[1], f[2], f[3]) for f in read_lines(d + "/events.log")]
    return sorted(sections.values(), key=lambda s: s.start), runs, sorted(events)


def overlaps(sections, limit):
    """Overlaps: (start, end, [sections]).  With limit 1, each pair of
    sections that share an instant; with a larger limit, each stretch of
    time in which more than limit sections ran, with every section seen
    in it."""
    if limit == 1:
        out = []
        for i, a in enumerate(sections):  # sorted by start
            for b in sections[i + 1:]:
                if b.start >= a.end:
                    continue
                out.append((b.start, min(a.end, b.end), [a, b]))
        return out
    points = sorted([(s.start, 1, i) for i, s in enumerate(sections)] +
                    [(s.end, -1, i) for i, s in enumerate(sections)])
    live, out, cur = set(), [], None
    for t, d, i in points:
        if d == 1:
            live.add(i)
        else:
            live.discard(i)
        if len(live) > limit and cur is None:
            cur = [t, t, set(live)]
        elif cur is not None:
            cur[2] |= live
            if len(live) <= limit:
                cur[1] = t
                out.append((cur[0], cur[1], [sections[j] for j in sorted(cur[2])]))
                cur = None
    return out


def stale_writes(sections):
    rej = acc = 0
    starts = sorted(s.start for s in sections)
    bad = []
    for s in sections:
        for t, ok in s.writes:
            # Some section began after s did and before this write.
            later = [x for x in starts if s.start < x < t]
            if later:
                if ok:
                    acc += 1
                    bad.append((t, s))
                else:
                    rej += 1
    return rej, acc, bad


def paused_during(s, events):
    return any(k == "pause" and tgt == s.host and ph == "start" and s.start <= t <= s.end
               for t, k, tgt, ph in events)


def restart_before(s, events):
    return any(k == "restart" and ph == "start" and t <= s.start for t, k, tgt, ph in events)


def admitted(ov, rules, events):
    """The rule that admits overlap ov, or None."""
    a, b, who = ov
    old = min(who, key=lambda s: s.start)
    new = max(who, key=lambda s: s.start)
    for rule in rules:
        name, _, arg = rule.partition("=")
        if name == "paused":
            for s in who:
                if paused_during(s, events) and s.status == 75:
                    return rule
        elif name == "drift":
            for s in who:
                if s.host == arg:
                    return rule
        elif name == "forget":
            if (restart_before(new, events) and (b - a) <= int(arg) * 10**6
                    and old.status == 75):
                return rule
    return None


def unavailability(sections, events, window_ms):
    """Per fault: the longest time in [start, heal + window] with no holder."""
    out = []
    ends = {}
    for t, k, tgt, ph in events:
        if ph == "end":
            ends.setdefault((k, tgt), []).append(t)
    for t, k, tgt, ph in events:
        if ph != "start":
            continue
        heal = min([e for e in ends.get((k, tgt), []) if e >= t] or [t])
        lo, hi = t, heal + window_ms * 10**6
        busy = sorted((max(s.start, lo), min(s.end, hi)) for s in sections
                      if s.end > lo and s.start < hi)
        gap, cur = 0, lo
        for a, b in busy:
            gap = max(gap, a - cur)
            cur = max(cur, b)
        gap = max(gap, hi - cur)
        out.append((k, tgt, gap / 1e9))
    return out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 64
    d, name = argv[1], argv[2]
    limit, rules, window = 1, [], DEFAULT_WINDOW_MS
    i = 3
    while i < len(argv):
        if argv[i] == "--limit":
            limit = int(argv[i + 1])
        elif argv[i] == "--admit":
            rules.append(argv[i + 1])
        elif argv[i] == "--window":
            window = int(argv[i + 1])
        else:
            sys.stderr.write("check.py: unknown argument %s\n" % argv[i])
            return 64
        i += 2
    sections, runs, events = load(d)
    fails = []
    ovs = overlaps(sections, limit)
    n_adm = 0
    for ov in ovs:
        a, b, who = ov
        rule = admitted(ov, rules, events)
        verdict = "admitted (%s)" % rule if rule else "NOT ADMITTED"
        n_adm += 1 if rule else 0
        print("  overlap %.3f s: %s; exits %s: %s" % (
            (b - a) / 1e9, " and ".join(s.label() for s in who),
            "/".join(str(s.status) for s in who), verdict))
        if not rule:
            fails.append("overlap")
    rej, acc, bad = stale_writes(sections) if limit == 1 else (0, 0, [])
    for t, s in bad:
        print("  stale write ACCEPTED from %s" % s.label())
    if acc:
        fails.append("stale write accepted")
    exits = collections.defaultdict(collections.Counter)
    for t, host, st in runs:
        exits[host][st] += 1
    ex = " ".join("%s:%s" % (h, ",".join("%d=%d" % (st, n) for st, n in sorted(c.items())))
                  for h, c in sorted(exits.items()))
    un = unavailability(sections, events, window)
    for k, tgt, gap in un:
        print("  %s %s: no holder for %.1f s at most" % (k, tgt, gap))
    if not sections:
        fails.append("no grant")
    result = "PASS" if not fails else "FAIL (%s)" % ", ".join(sorted(set(fails)))
    row = (name, str(len(runs)), str(len(sections)), str(len(ovs)), str(n_adm),
           str(rej) if limit == 1 else "-", str(acc) if limit == 1 else "-", ex or "-",
           "%.1f" % max([g for _, _, g in un] or [0.0]), result)
    print("row\t" + "\t".join(row))
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
