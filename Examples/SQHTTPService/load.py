#!/usr/bin/env python3
"""Drive sq-http-service with wrk under each executor placement and print one table.

For each executor (default, swiftqueues, dispatch) this starts the release binary on loopback
with --port 0 (it prints the port it got), checks GET /health and the POST /hash digest of known
bodies against an independent Python implementation of the hash, runs wrk (-t2, -c16 and -c64,
--latency, post-4k.lua), then sends SIGTERM and checks that the service exits 0 and prints its
summary line. Last, one more service gets SIGTERM while a slow request (400,000 rounds) is in
flight: the request must still be answered and the service must exit 0. Any failed check stops
the run with exit status 1.

Only loopback is ever contacted. Used by `make load`.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MASK = (1 << 64) - 1
EXECUTORS = ("default", "swiftqueues", "dispatch")
DEFAULT_ROUNDS = 128  # MixHash.defaultRounds


def mix(x):
    """SplitMix64's finaliser."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    x ^= x >> 31
    return x


def mixhash(data, rounds=DEFAULT_ROUNDS):
    """MixHash written from its definition (Sources/HTTPServiceKit/MixHash.swift's doc comment)."""
    h = 0x9E3779B97F4A7C15 ^ len(data)
    padded = data + b"\0" * (-len(data) % 8)
    words = [int.from_bytes(padded[i:i + 8], "little") for i in range(0, len(padded), 8)]
    for r in range(rounds):
        for w in words:
            h = mix(h ^ w)
        h = mix(h ^ r)
    return "%016x" % h


def body4k():
    """The body of post-4k.lua: byte i = (31 * i + 7) mod 256."""
    return bytes((31 * i + 7) % 256 for i in range(4096))


def fail(message):
    print("load.py: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def start_service(binary, executor, log):
    proc = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--executor", executor],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        fail("%s: no 'listening on' line, got %r" % (executor, line))
    return proc, int(m.group(1))


def http(port, method, path, data=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, resp.read().decode()


def check_service(port, executor):
    status, text = http(port, "GET", "/health")
    if status != 200 or text.strip() != "ok":
        fail("%s: GET /health answered %d %r" % (executor, status, text))
    for body in (b"", b"hello, world", b"x" * 13, body4k()):
        status, text = http(port, "POST", "/hash", body)
        want = mixhash(body)
        if status != 200 or text.strip() != want:
            fail("%s: POST /hash of %d bytes answered %d %r, expected %s"
                 % (executor, len(body), status, text.strip(), want))


def parse_latency(text):
    """wrk's '2.50ms' / '812.00us' / '1.02s' in milliseconds."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def run_wrk(port, connections, seconds):
    out = subprocess.run(
        ["wrk", "-t2", "-c%d" % connections, "-d%ds" % seconds, "--latency",
         "-s", os.path.join(HERE, "post-4k.lua"), "http://127.0.0.1:%d/hash" % port],
        capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        fail("wrk exited %d: %s" % (out.returncode, out.stderr))
    text = out.stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p50 = re.search(r"^\s+50%\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", text, re.M)
    total = re.search(r"(\d+) requests in", text)
    if not (rps and p50 and p99 and total):
        fail("cannot read wrk's output:\n" + text)
    errors = re.search(r"Socket errors: (.*)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if non2xx:
        fail("wrk saw %s non-2xx answers:\n%s" % (non2xx.group(1), text))
    return {"load": os.getloadavg()[0], "rps": float(rps.group(1)), "p50": parse_latency(p50.group(1)),
            "p99": parse_latency(p99.group(1)), "requests": int(total.group(1)),
            "socket_errors": errors.group(1) if errors else ""}


def stop_service(proc, executor, send=True):
    if send:
        proc.send_signal(signal.SIGTERM)
    try:
        rest, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("%s: still running 30 s after SIGTERM" % executor)
    if proc.returncode != 0:
        fail("%s: exit status %d after SIGTERM" % (executor, proc.returncode))
    summary = [l for l in rest.splitlines() if l.startswith("sq-http-service: served ")]
    if not summary:
        fail("%s: no summary line after SIGTERM; output ended with %r" % (executor, rest[-500:]))
    return summary[-1]


def check_graceful_shutdown(binary, log):
    """SIGTERM while a slow request is in flight: the request must still get its answer, new
    connections must be refused, and the service must exit 0 with its summary. The pass does not
    depend on timing: if the request happened to finish before the signal, it is only reported."""
    proc = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--rounds", "400000", "--quiet"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        fail("shutdown check: no 'listening on' line")
    port = int(m.group(1))
    answer = {}

    def slow_request():
        try:
            answer["reply"] = http(port, "POST", "/hash", body4k())
        except Exception as error:  # reported below
            answer["error"] = error

    thread = threading.Thread(target=slow_request)
    thread.start()
    time.sleep(0.3)  # let the request reach the service (not a pass condition)
    in_flight = thread.is_alive()
    proc.send_signal(signal.SIGTERM)
    thread.join(timeout=120)
    if "error" in answer or "reply" not in answer:
        proc.kill()
        fail("shutdown check: the request in flight got no answer: %r" % answer.get("error"))
    status, text = answer["reply"]
    if status != 200 or not re.fullmatch(r"[0-9a-f]{16}", text.strip()):
        fail("shutdown check: answer %d %r" % (status, text))
    summary = stop_service(proc, "shutdown check", send=False)  # checks exit 0 and the summary
    return in_flight, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(HERE, ".build", "release", "sq-http-service"))
    ap.add_argument("--seconds", type=int, default=5, help="wrk -d per run (default 5)")
    ap.add_argument("--connections", default="16,64", help="wrk -c values (default 16,64)")
    ap.add_argument("--executors", default=",".join(EXECUTORS))
    ap.add_argument("--log", default=os.path.join(HERE, ".build", "load-service.log"),
                    help="where the services' per-second lines go")
    ap.add_argument("--no-shutdown-check", action="store_true",
                    help="skip the SIGTERM-with-a-request-in-flight check")
    ap.add_argument("--print-vectors", action="store_true",
                    help="print the test vectors of MixHashTests and exit")
    args = ap.parse_args()

    if args.print_vectors:
        print("empty, 1 round:", mixhash(b"", 1))
        print("'hello, world', 3 rounds:", mixhash(b"hello, world", 3))
        print("4 KiB body, default rounds:", mixhash(body4k()))
        return
    if not os.access(args.binary, os.X_OK):
        fail("no service binary at %s (make load builds it)" % args.binary)

    connections = [int(c) for c in args.connections.split(",")]
    executors = args.executors.split(",")
    rows = []
    os.makedirs(os.path.dirname(args.log), exist_ok=True)
    with open(args.log, "w") as log:
        for executor in executors:
            proc, port = start_service(args.binary, executor, log)
            try:
                check_service(port, executor)
                print("%s: digests and /health checked on port %d" % (executor, port), flush=True)
                for c in connections:
                    result = run_wrk(port, c, args.seconds)
                    rows.append((executor, c, result))
                    print("%s -c%d: %.0f req/s, p50 %.2f ms, p99 %.2f ms" %
                          (executor, c, result["rps"], result["p50"], result["p99"]), flush=True)
            except BaseException:
                if proc.poll() is None:
                    proc.kill()
                raise
            summary = stop_service(proc, executor)
            print("%s: SIGTERM -> exit 0; %s" % (executor, summary), flush=True)
        if not args.no_shutdown_check:
            in_flight, summary = check_graceful_shutdown(args.binary, log)
            print("graceful shutdown: the request %s SIGTERM was answered; exit 0; %s"
                  % ("in flight at" if in_flight else "finished before", summary), flush=True)

    print()
    # The 1-minute load average after each run shows how busy the machine was (wrk shares it).
    print("%d CPUs; wrk -t2 -d%ds on the same machine; POST /hash, 4 KiB body"
          % (os.cpu_count(), args.seconds))
    print("| executor | connections | requests/s | p50 (ms) | p99 (ms) | load avg |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for executor, c, r in rows:
        print("| %s | %d | %.0f | %.2f | %.2f | %.1f |"
              % (executor, c, r["rps"], r["p50"], r["p99"], r["load"]))
    errors = [(e, c, r["socket_errors"]) for e, c, r in rows if r["socket_errors"]]
    for e, c, text in errors:
        print("note: %s -c%d socket errors: %s" % (e, c, text))


if __name__ == "__main__":
    main()
