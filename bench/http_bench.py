#!/usr/bin/env python3
"""http_bench.py — the socket-server benchmark: bench/http_server.c built against our runtime
(cq-http-server) and against libdispatch (cq-http-server-libdispatch), driven by wrk on
loopback, alternating between the two at each connection count.

For every run it records wrk's requests/s and p50/p99 latency and the server's CPU time
(utime + stime from /proc/PID/stat, read before and after the run), and prints per connection
count the medians for both runtimes and their ratios, each ratio written so that above 1 is
better for us. Before every run it also records how long a cache line takes to go between the
two CPUs and back (cq-core-rtt, when it is in --bin-dir): a virtual machine's host moves its
vCPUs between cores that share a cache (~70-100 ns here) and cores that do not (~200-400 ns)
from one second to the next, and every figure of a run follows; the row "core round trip"
shows whether both runtimes' runs met the same placement.

The kernel also decides which threads share a CPU, from one run to the next; --pin split fixes
one placement for both runtimes (the server on the first CPU, wrk on the second).

Exit status: 0 when every server answered correctly; 1 if a server crashed, answered a probe
wrongly, or wrk saw a non-2xx answer (never because of timing); 2 on a usage error (or missing
server binaries); 77 when wrk is not installed (ctest reports a skip).

    bench/http_bench.py --bin-dir build-bench/bench            # 16, 64, 256 connections, 5 s
    bench/http_bench.py --bin-dir build-bench/bench --quick    # 1 s runs, no warm-up
    bench/http_bench.py --bin-dir build-bench/bench --json http.json   # also the rows as JSON
    bench/http_bench.py --bin-dir build-bench/bench --pin split   # server and wrk on a CPU each
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

SERVERS = {"ours": "cq-http-server", "libdispatch": "cq-http-server-libdispatch"}
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
BAD_RESPONSE = (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Failure(Exception):
    pass


class Server:
    def __init__(self, name, path, cpus=None):
        self.name = name
        self.path = path
        self.proc = subprocess.Popen([path], stdout=subprocess.PIPE, preexec_fn=pin_to(cpus))
        self.probes = 0      # good requests the probes sent
        self.bad_probes = 0  # bad requests the probes sent
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode() if ready else ""
        m = re.match(r"port (\d+)", line)
        if not m:
            self.proc.kill()
            raise Failure(f"{name} server did not start (printed {line!r})")
        self.port = int(m.group(1))

    def check_alive(self):
        if self.proc.poll() is not None:
            raise Failure(f"{self.name} server exited with status {self.proc.returncode}")

    def waits(self):
        """The server's waits since the last call (SIGUSR1; see http_server.c), in us."""
        self.check_alive()
        self.proc.send_signal(signal.SIGUSR1)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode() if ready else ""
        m = re.match(r"wait n (\d+) p50 ([\d.]+) p99 ([\d.]+) p999 ([\d.]+) max ([\d.]+)", line)
        if not m:
            self.check_alive()
            raise Failure(f"{self.name} server did not report its waits (printed {line!r})")
        return {"n": int(m.group(1)), "p50": float(m.group(2)), "p99": float(m.group(3)),
                "p999": float(m.group(4)), "max": float(m.group(5))}

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)

    def stop(self):
        """Stops the server; returns (served, bad) as it counted them."""
        if self.proc.poll() is not None:
            raise Failure(f"{self.name} server exited with status {self.proc.returncode}")
        self.proc.terminate()
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure(f"{self.name} server did not stop on SIGTERM")
        if self.proc.returncode != 0:
            raise Failure(f"{self.name} server exited with status {self.proc.returncode}")
        m = re.search(rb"served (\d+) bad (\d+)", out)
        if not m:
            raise Failure(f"{self.name} server printed no counts ({out!r})")
        return int(m.group(1)), int(m.group(2))


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def probe(server):
    """Checks the answers byte for byte: one request, three pipelined in one write, one split
    across two writes, and a bad request (400, then the server closes the connection)."""
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as s:
            s.sendall(REQUEST)
            got = recv_exact(s, len(RESPONSE))
            if got != RESPONSE:
                raise Failure(f"{server.name}: wrong answer to a request: {got!r}")
            s.sendall(REQUEST * 3)
            got = recv_exact(s, 3 * len(RESPONSE))
            if got != RESPONSE * 3:
                raise Failure(f"{server.name}: wrong answer to 3 pipelined requests: {got!r}")
            s.sendall(REQUEST[:10])
            time.sleep(0.02)
            s.sendall(REQUEST[10:])
            got = recv_exact(s, len(RESPONSE))
            if got != RESPONSE:
                raise Failure(f"{server.name}: wrong answer to a split request: {got!r}")
            server.probes += 5
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as s:
            s.sendall(b"BREW / HTTP/1.1\r\n\r\n")
            got = recv_exact(s, len(BAD_RESPONSE) + 1)  # +1: the server must close after it
            if got != BAD_RESPONSE:
                raise Failure(f"{server.name}: wrong answer to a bad request: {got!r}")
            server.bad_probes += 1
    except (OSError, socket.timeout) as e:
        server.check_alive()
        raise Failure(f"{server.name}: probe failed: {e}")


def to_ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def core_round_trip(bin_dir):
    """cq-core-rtt's figure in ns, or NaN if the tool is missing or cannot measure."""
    tool = os.path.join(bin_dir, "cq-core-rtt")
    if not os.access(tool, os.X_OK):
        return float("nan")
    try:
        r = subprocess.run([tool], capture_output=True, text=True, timeout=30)
        return float(r.stdout.strip()) if r.returncode == 0 else float("nan")
    except (subprocess.TimeoutExpired, ValueError):
        return float("nan")


def pin_to(cpus):
    """A preexec_fn that runs the child (and every thread it starts) on `cpus`, or None."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def run_wrk(server, args, conns, duration, cpus=None):
    """One wrk run against `server`; with `cpus`, wrk runs there."""
    cmd = [args.wrk, f"-t{args.threads}", f"-c{conns}", f"-d{duration}s", "--latency",
           f"http://127.0.0.1:{server.port}/"]
    server.waits()  # start counting afresh
    cpu0 = server.cpu_seconds()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60,
                           preexec_fn=pin_to(cpus))
    except subprocess.TimeoutExpired:
        server.check_alive()
        raise Failure(f"{server.name}: wrk did not finish ({' '.join(cmd)})")
    server.check_alive()
    cpu1 = server.cpu_seconds()
    waits = server.waits()
    out = r.stdout
    if r.returncode != 0:
        raise Failure(f"{server.name}: wrk failed ({r.returncode}): {r.stderr.strip()}")
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if m and int(m.group(1)) > 0:
        raise Failure(f"{server.name}: wrk saw {m.group(1)} non-2xx answers")
    lat = {p: to_ms(v, u) for p, v, u in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s)\s*$",
                                                    out, re.M)}
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if not rps or not total or any(p not in lat for p in ("50", "90", "99")):
        raise Failure(f"{server.name}: cannot read wrk's output:\n{out}")
    res = {"rps": float(rps.group(1)), "p50": lat["50"], "p90": lat["90"], "p99": lat["99"],
           "requests": int(total.group(1)), "cpu": cpu1 - cpu0}
    res["cpu_us"] = res["cpu"] * 1e6 / res["requests"] if res["requests"] else float("nan")
    res["wait_p50"], res["wait_p99"], res["wait_p999"] = waits["p50"], waits["p99"], waits["p999"]
    errors = re.search(r"Socket errors: (.*)", out)
    res["note"] = ("socket errors: " + errors.group(1)) if errors else ""
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin-dir", default=os.path.join(root, "build-bench", "bench"),
                    help="where cq-http-server and cq-http-server-libdispatch are")
    ap.add_argument("--conns", default="16,64,256", help="connection counts (default 16,64,256)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    ap.add_argument("--reps", type=int, default=5, help="runs per runtime and count (median)")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    ap.add_argument("--warmup", type=int, default=1, help="seconds of unmeasured load first")
    ap.add_argument("--quick", action="store_true", help="1 s runs, 1 rep, no warm-up")
    ap.add_argument("--runtime", choices=["both", "ours", "libdispatch"], default="both")
    ap.add_argument("--verbose", action="store_true", help="print every run")
    ap.add_argument("--wrk", default="wrk")
    ap.add_argument("--pin", choices=["none", "split"], default="none",
                    help="split: the server on the first CPU, wrk on the second (one placement "
                         "for both runtimes); none: where the kernel puts them (default)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the table's rows to FILE as JSON (scripts/bench_report.py)")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.reps, args.warmup = 1, 1, 0
    try:
        conns = [int(c) for c in args.conns.split(",")]
    except ValueError:
        ap.error("--conns takes numbers separated by commas")
    if args.duration < 1 or args.reps < 1 or min(conns) < 1 or args.threads < 1:
        ap.error("durations, repetitions, thread and connection counts must be positive")
    conns = [max(c, args.threads) for c in conns]  # wrk needs a connection per thread
    if shutil.which(args.wrk) is None:
        print(f"http_bench: {args.wrk} not found (Debian: apt-get install wrk); skipped")
        return 77
    names = ["ours", "libdispatch"] if args.runtime == "both" else [args.runtime]
    paths = {n: os.path.join(args.bin_dir, SERVERS[n]) for n in names}
    for n, p in paths.items():
        if not os.access(p, os.X_OK):
            print(f"http_bench: {p} not found (ninja -C <build> {SERVERS[n]})", file=sys.stderr)
            return 2

    server_cpus = wrk_cpus = None
    if args.pin == "split":
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            print("http_bench: --pin split needs two CPUs", file=sys.stderr)
            return 2
        server_cpus, wrk_cpus = {cpus[0]}, {cpus[1]}

    servers = {}
    results = {(n, c): [] for n in names for c in conns}
    try:
        for n in names:
            servers[n] = Server(n, paths[n], server_cpus)
            probe(servers[n])
            if args.warmup:
                run_wrk(servers[n], args, max(conns), args.warmup, wrk_cpus)
        flip = False
        for c in conns:
            for rep in range(args.reps):
                order = names[::-1] if flip else names
                flip = not flip
                for n in order:
                    time.sleep(0.2)  # let the other server's threads settle and park
                    rtt = core_round_trip(args.bin_dir)
                    r = run_wrk(servers[n], args, c, args.duration, wrk_cpus)
                    r["rtt"] = rtt
                    probe(servers[n])
                    results[(n, c)].append(r)
                    if args.verbose:
                        print(f"  {n:11} c={c:<4} rep {rep + 1}: {r['rps']:9.0f} req/s  "
                              f"p50 {r['p50']:7.3f} ms  p99 {r['p99']:7.3f} ms  "
                              f"wait p50/p99/p99.9 {r['wait_p50']:.0f}/{r['wait_p99']:.0f}/"
                              f"{r['wait_p999']:.0f} us  "
                              f"CPU {r['cpu']:5.2f} s = {r['cpu_us']:5.1f} us/req  "
                              f"core rtt {r['rtt']:.0f} ns  {r['note']}",
                              flush=True)
        for n, s in servers.items():
            served, bad = s.stop()
            wrk_total = sum(r["requests"] for (m, _), rs in results.items() if m == n
                            for r in rs)
            if bad != s.bad_probes:
                raise Failure(f"{n}: the server counted {bad} bad requests, "
                              f"the probes sent {s.bad_probes}")
            if served < wrk_total + s.probes:
                raise Failure(f"{n}: the server answered {served} requests, but wrk and the "
                              f"probes got {wrk_total + s.probes} answers")
    except Failure as e:
        print(f"http_bench: FAILED: {e}", file=sys.stderr)
        for s in servers.values():
            if s.proc.poll() is None:
                s.proc.kill()
        return 1

    rows = [("rps", "requests/s", "{:.0f}", True), ("p50", "latency p50 ms", "{:.3f}", False),
            ("p90", "latency p90 ms", "{:.3f}", False),
            ("p99", "latency p99 ms", "{:.3f}", False),
            ("wait_p50", "wait p50 us", "{:.1f}", False),
            ("wait_p99", "wait p99 us", "{:.1f}", False),
            ("wait_p999", "wait p99.9 us", "{:.1f}", False),
            ("cpu_us", "CPU us/request", "{:.1f}", False),
            ("rtt", "core round trip ns", "{:.0f}", None)]
    print(f"HTTP/1.1 keep-alive server on READ sources, wrk -t{args.threads} -d{args.duration}s "
          f"on loopback, {os.cpu_count()} CPUs, median of {args.reps} run(s) per cell"
          + (", the server pinned to one CPU and wrk to another." if args.pin == "split" else "."))
    print("latency: wrk's (client side). wait: the server's, from the kernel's receive "
          "timestamp to the handler.")
    if len(names) == 2:
        print("ratio: above 1 is better for us (ours/libdispatch for requests/s, "
              "libdispatch/ours for the others).")
    print(f"{'conns':>5}  {'':<16}" + "".join(f"{n:>12}" for n in names) +
          (f"{'ratio':>8}" if len(names) == 2 else ""))
    json_rows = []
    for c in conns:
        for i, (key, label, fmt, higher) in enumerate(rows):
            vals = [statistics.median(r[key] for r in results[(n, c)]) for n in names]
            line = f"{c if i == 0 else '':>5}  {label:<16}" + "".join(
                f"{fmt.format(v):>12}" for v in vals)
            ratio = None
            if higher is None:  # context, not a result: no ratio
                line += f"{'':>8}" if len(names) == 2 else ""
            elif len(names) == 2:
                a, b = vals if higher else vals[::-1]
                ratio = a / b if b else None
                line += f"{ratio:>8.2f}" if b else f"{'-':>8}"
            print(line)
            by_name = dict(zip(names, vals))
            metric, _, unit = label.rpartition(" ")
            if not metric:
                metric, unit = label, "req/s"
            json_rows.append({
                "name": f"c{c} {metric}", "conns": c, "metric": key, "unit": unit,
                "ours": finite(by_name.get("ours")), "theirs": finite(by_name.get("libdispatch")),
                "ratio": finite(ratio),
                "better": "context" if higher is None else "higher" if higher else "lower"})
    if args.json:
        doc = {"tool": "http_bench", "table": "HTTP server on READ sources vs libdispatch",
               "ours": "CQueueCore", "theirs": "libdispatch", "quick": args.quick,
               "reps": args.reps, "duration_s": args.duration, "wrk_threads": args.threads,
               "pin": args.pin,
               "verified": True, "rows": json_rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 0


def finite(v):
    """v, or None when it is missing or not a finite number (JSON has no NaN)."""
    return v if isinstance(v, (int, float)) and v == v and abs(v) != float("inf") else None


if __name__ == "__main__":
    sys.exit(main())
