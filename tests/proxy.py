#!/usr/bin/python3
"""A small TCP proxy on loopback for fault-injection tests.

    proxy.py UPSTREAM PORTFILE CONTROLFILE STATUSFILE

UPSTREAM is a unix socket path or HOST:PORT.  The proxy listens on a free
port of 127.0.0.1 and writes it to PORTFILE (atomically) once it accepts
connections; every accepted connection gets its own upstream connection.

The test steers it by writing CONTROLFILE (write a temporary file, then
rename it), one line "GEN MODE [ARG]":

    GEN pass            forward both ways at once
    GEN delay MS        hold every reply (upstream to client) for MS ms
    GEN blackhole       forward nothing either way; connections stay open
                        and new ones are accepted, but every byte is
                        dropped (like a peer that vanished from the
                        network); leaving this mode closes the
                        connections whose bytes were dropped, since their
                        streams are broken
    GEN reset           close every connection now (one-shot), then pass

GEN is any word that changes with each write; once a line is in force the
proxy writes "GEN MODE [ARG]" to STATUSFILE (atomically), so the test can
wait for it.  SIGTERM ends the proxy.  Standard library only.
"""

import collections
import os
import selectors
import signal
import socket
import sys
import time


def now_ms():
    return time.monotonic() * 1000.0


def write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


class Conn:
    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        self.to_up = bytearray()
        # Replies waiting for their time: (due_ms, bytes), in order.
        self.to_client = collections.deque()
        self.client_out = bytearray()
        self.tainted = False  # bytes were dropped: the stream is broken
        self.closed = False


class Proxy:
    def __init__(self, upstream, portfile, control, status):
        self.upstream = upstream
        self.control = control
        self.status = status
        self.mode = "pass"
        self.arg = 0
        self.gen = None
        self.control_stamp = None
        self.conns = set()
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.read_control()
        write_atomic(portfile, "%d\n" % self.listener.getsockname()[1])

    # --- control -----------------------------------------------------------

    def read_control(self):
        try:
            st = os.stat(self.control)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_ino, st.st_size)
        if stamp == self.control_stamp:
            return
        self.control_stamp = stamp
        try:
            with open(self.control) as f:
                words = f.read().split()
        except FileNotFoundError:
            return
        if len(words) < 2 or words[0] == self.gen:
            return
        gen, mode = words[0], words[1]
        arg = int(words[2]) if len(words) > 2 else 0
        old = self.mode
        if mode == "reset":
            for c in list(self.conns):
                self.close(c)
            mode = "pass"
        if old == "blackhole" and mode != "blackhole":
            for c in list(self.conns):
                if c.tainted:
                    self.close(c)
        self.mode, self.arg, self.gen = mode, arg, gen
        write_atomic(self.status, " ".join(words) + "\n")

    # --- connections -----------------------------------------------------------

    def connect_upstream(self):
        if ":" in self.upstream and not self.upstream.startswith("/"):
            host, port = self.upstream.rsplit(":", 1)
            s = socket.create_connection((host, int(port)), timeout=2)
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(self.upstream)
        s.setblocking(False)
        return s

    def accept(self):
        try:
            client, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        client.setblocking(False)
        try:
            upstream = self.connect_upstream()
        except OSError:
            client.close()
            return
        c = Conn(client, upstream)
        self.conns.add(c)
        self.sel.register(client, selectors.EVENT_READ, (c, "client"))
        self.sel.register(upstream, selectors.EVENT_READ, (c, "upstream"))

    def close(self, c):
        if c.closed:
            return
        c.closed = True
        for s in (c.client, c.upstream):
            try:
                self.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
        self.conns.discard(c)

    def update_events(self, c):
        if c.closed:
            return
        self.sel.modify(c.client, selectors.EVENT_READ |
                        (selectors.EVENT_WRITE if c.client_out else 0),
                        (c, "client"))
        self.sel.modify(c.upstream, selectors.EVENT_READ |
                        (selectors.EVENT_WRITE if c.to_up else 0),
                        (c, "upstream"))

    def on_read(self, c, side):
        s = c.client if side == "client" else c.upstream
        try:
            data = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.close(c)
            return
        if self.mode == "blackhole":
            c.tainted = True
            return
        if side == "client":
            c.to_up += data
        else:
            due = now_ms() + (self.arg if self.mode == "delay" else 0)
            if c.to_client and c.to_client[-1][0] > due:
                due = c.to_client[-1][0]
            c.to_client.append((due, bytes(data)))

    def on_write(self, c, side):
        buf = c.client_out if side == "client" else c.to_up
        s = c.client if side == "client" else c.upstream
        if not buf:
            return
        try:
            n = s.send(buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close(c)
            return
        del buf[:n]

    def release_due(self, t):
        """Move replies whose time has come to the client's buffer; return
        the earliest due time still pending, or None."""
        nxt = None
        for c in list(self.conns):
            while c.to_client and c.to_client[0][0] <= t:
                c.client_out += c.to_client.popleft()[1]
            if c.to_client and (nxt is None or c.to_client[0][0] < nxt):
                nxt = c.to_client[0][0]
        return nxt

    def run(self):
        while True:
            self.read_control()
            t = now_ms()
            nxt = self.release_due(t)
            for c in list(self.conns):
                if self.mode == "blackhole":
                    c.to_client.clear()
                    if c.client_out or c.to_up:
                        c.tainted = True
                    c.client_out.clear()
                    c.to_up.clear()
                self.update_events(c)
            timeout = 0.01
            if nxt is not None:
                timeout = max(0.0, min(timeout, (nxt - t) / 1000.0))
            for key, events in self.sel.select(timeout):
                if key.data is None:
                    self.accept()
                    continue
                c, side = key.data
                if c.closed:
                    continue
                if events & selectors.EVENT_WRITE:
                    self.on_write(c, side)
                if not c.closed and events & selectors.EVENT_READ:
                    self.on_read(c, side)


def main():
    if len(sys.argv) != 5:
        sys.stderr.write("usage: proxy.py UPSTREAM PORTFILE CONTROLFILE "
                         "STATUSFILE\n")
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    Proxy(*sys.argv[1:]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
