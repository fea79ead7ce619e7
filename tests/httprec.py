#!/usr/bin/python3
"""A small HTTP recorder on loopback, standing in for a monitoring service
(healthchecks.io and the like) in the hook tests.

    httprec.py PORTFILE LOGFILE

Listens on a free port of 127.0.0.1, writes it to PORTFILE (atomically)
once it accepts connections, and answers every GET, POST and HEAD with
200 "OK".  Each request is appended to LOGFILE as one line, written whole:

    METHOD PATH BODY

PATH is the path with its query string; BODY is the request body with
backslashes, newlines and carriage returns escaped (empty when there is
none).  SIGTERM ends it.  Standard library only.
"""

import http.server
import os
import signal
import sys


class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def record(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "backslashreplace") if n else ""
        body = body.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        line = "%s %s %s\n" % (self.command, self.path, body)
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(b"OK")

    do_GET = do_POST = do_HEAD = record

    def log_message(self, fmt, *args):
        pass


def main():
    global LOG
    portfile, LOG = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, portfile)
    server.serve_forever()


LOG = None
if __name__ == "__main__":
    main()
