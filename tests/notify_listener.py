#!/usr/bin/python3
"""A stand-in for systemd's end of NOTIFY_SOCKET, for tests/sd-notify.bats.

Usage: notify_listener.py ADDRESS OUT [--stuck]

Binds a unix datagram socket at ADDRESS (a path, or @name for the abstract
namespace, as NOTIFY_SOCKET writes it), creates OUT.ready, then appends
each line of each datagram to OUT as "PID LINE", PID being the sender's
as the kernel vouches for it (SCM_CREDENTIALS), as systemd checks it
against NotifyAccess=.  A datagram "FLUSH N" is not written: it creates
OUT.flushed-N, so that a test knows every datagram sent before it is in
OUT (a socket's datagrams are read in the order they arrived).  Runs
until killed.

--stuck: a listener that never reads: it fills its own queue (until a
send would wait) before it creates OUT.ready, then sleeps, so that a
sender that waits for room waits for ever.
"""
import socket
import struct
import sys
import time


def main():
    address, out = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    where = "\0" + address[1:] if address.startswith("@") else address
    s.bind(where)
    if sys.argv[3:] == ["--stuck"]:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for _ in range(100000):
            try:
                c.sendto(b"x", socket.MSG_DONTWAIT, where)
            except BlockingIOError:
                break
        open(out + ".ready", "w").close()
        while True:
            time.sleep(3600)
    open(out + ".ready", "w").close()
    creds = struct.calcsize("iII")
    with open(out, "a") as f:
        while True:
            msg, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(creds))
            if msg.startswith(b"FLUSH "):
                open("%s.flushed-%s" % (out, msg[6:].decode()), "w").close()
                continue
            pid = 0
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", data[:creds])[0]
            for line in msg.decode(errors="backslashreplace").split("\n"):
                f.write("%d %s\n" % (pid, line))
            f.flush()


main()
