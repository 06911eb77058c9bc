#!/usr/bin/env python3
"""http_emfile_test.py BIN_DIR: the socket-server benchmark's server (bench/http_server.c, on
our runtime and, where it was built, on libdispatch) out of file descriptors. With the
process's limit low and more clients than descriptors, accept fails with EMFILE: the server
used to retry at full speed on its level-triggered READ source and print a line each time
(9 MB of stderr in 3 s, a CPU kept busy); now it says so once and retries every 10 ms. Checks
that it says so once, and that the clients waiting in the backlog are all answered once
descriptors are free again. Exit status 0 when both hold for every server found, 1 otherwise,
2 on a usage error.
"""
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from the import below
from http_bench import RESPONSE, REQUEST, SERVERS, recv_exact  # noqa: E402

LIMIT = 48       # the server's descriptor limit
CLIENTS = 80     # more than it can hold: the rest wait in the listen backlog
PATIENCE = 30.0  # seconds, for each event waited for
QUIET = 1.0      # seconds watched for a flood of messages once the first has come
MESSAGE = b"Too many open files"


def check(path):
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(["sh", "-c", f"ulimit -n {LIMIT}; exec \"$0\"", path],
                            stdout=subprocess.PIPE, stderr=err)
    clients = []
    try:
        ready, _, _ = select.select([proc.stdout], [], [], PATIENCE)
        line = proc.stdout.readline().decode() if ready else ""
        m = re.match(r"port (\d+)", line)
        if not m:
            return f"did not start (printed {line!r})"
        port = int(m.group(1))
        clients = [socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)
                   for _ in range(CLIENTS)]
        # The event: the server has met EMFILE and said so.
        deadline = time.monotonic() + PATIENCE
        while True:
            err.seek(0)
            if MESSAGE in err.read():
                break
            if time.monotonic() > deadline:
                return "never reported running out of descriptors"
            time.sleep(0.01)
        time.sleep(QUIET)  # a flood would show here (megabytes a second)
        err.seek(0)
        said = err.read()
        if said.count(MESSAGE) != 1:
            return (f"reported running out of descriptors {said.count(MESSAGE)} times "
                    f"({len(said)} bytes of stderr in {QUIET} s)")
        for s in clients[:CLIENTS - 20]:
            s.close()
        for s in clients[CLIENTS - 20:]:
            s.sendall(REQUEST)
            got = recv_exact(s, len(RESPONSE))
            if got != RESPONSE:
                return f"a client that waited in the backlog got {got!r}"
        if proc.poll() is not None:
            return f"exited with status {proc.returncode}"
        return None
    except OSError as e:
        return f"a client failed: {e}"
    finally:
        for s in clients:
            s.close()
        proc.kill()
        proc.wait()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    status = 0
    found = 0
    for name, binary in SERVERS.items():
        path = os.path.join(sys.argv[1], binary)
        if not os.path.exists(path):
            continue
        found += 1
        problem = check(path)
        print(f"{name}: {problem or 'ok'}")
        status |= problem is not None
    if found == 0:
        print(f"no server in {sys.argv[1]}")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
