#!/usr/bin/env python3
"""bench_report.py — `make bench` in one command: runs the benchmark tables and writes a report.

    scripts/bench_report.py run [--quick] --bin-dir build-bench/bench --swift-bench PATH
    scripts/bench_report.py report DIR          # redraw DIR's README.md and charts from results.json
    scripts/bench_report.py report --latest DIR # ... and make DIR the latest (index, docs)
    scripts/bench_report.py selftest            # draw made-up tables into a temporary folder, check

`run` runs, one after the other, the C core against libdispatch (cq-bench), the HTTP server
against libdispatch (bench/http_bench.py) and the Swift layer against the Dispatch overlay,
Swift's default executor and Foundation's OperationQueue (sq-swift-bench), each with --json,
and shows one progress line on stderr ("[3/41] C: serial_async ..."; rewritten in place on a
terminal, one line per step otherwise). Each tool's full output goes to a text file beside the
report. Then it writes into bench/results/<UTC date-time>/ (bench/results/<...>-quick/ with
--quick, which git ignores):

    results.json   every row of every table: name, unit, ours, theirs, ratio, better-is
    README.md      the machine and date, the charts and a Markdown table per table
    *.svg          one chart per table, drawn here (no plotting library): a pair of horizontal
                   bars per workload, ours and theirs, relative to the larger of the two,
                   on a log scale when a table's ratios span more than 10x

A full run (not --quick) also rewrites bench/results/latest/README.md (an index that points at
the new folder) and the block between the bench-report markers in docs/benchmarks.md.

Ratios are always written so that above 1 is better for us: theirs/ours for lower-is-better
figures (times, memory), ours/theirs for higher-is-better ones (requests/s).

Exit status: 0 when every tool ran and verified its results, 1 otherwise (the report is written
with what there is), 2 on a usage error.
"""
import argparse
import datetime
import html
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
DOC_BEGIN = "<!-- bench-report:begin (written by scripts/bench_report.py; edits here are lost) -->"
DOC_END = "<!-- bench-report:end -->"


# ---- progress ------------------------------------------------------------------------------

class Progress:
    """One line on stderr: rewritten in place on a terminal, a plain line per step otherwise."""

    def __init__(self, total):
        self.total = total
        self.step = 0
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.shown = False

    def next(self, label):
        self.step += 1
        text = f"[{self.step}/{self.total}] {label} ...  ({time.monotonic() - self.t0:.0f} s)"
        if self.tty:
            try:
                width = os.get_terminal_size(sys.stderr.fileno()).columns - 1
            except OSError:
                width = 79
            sys.stderr.write("\r\033[K" + text[:width])
            self.shown = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def clear(self):
        if self.tty and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False

    def say(self, text):
        self.clear()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


# ---- running the tools -----------------------------------------------------------------------

def positional(args):
    """The workload names among a tool's extra arguments (options and their values left out)."""
    names, skip = [], False
    takes_value = {"--reps", "--fib-limit", "--watchdog", "--runtime", "--only", "--json"}
    for a in args:
        if skip:
            skip = False
        elif a in takes_value:
            skip = True
        elif not a.startswith("-"):
            names.append(a)
    return names


def list_workloads(cmd):
    """Workload names a tool would run, from its --list (first word of each line)."""
    out = subprocess.run(cmd + ["--list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.strip() and "(the same runs" not in line]


def shown_arg(arg):
    """A command-line argument as the log shows it: paths relative to the repository, the
    interpreter as `python3` (the log is committed; other machines have other folders)."""
    if arg == sys.executable:
        return "python3"
    if os.path.isabs(arg) and arg.startswith(ROOT + os.sep):
        return os.path.relpath(arg, ROOT)
    return arg


def run_tool(cmd, log_path, progress, on_line):
    """Runs cmd, its stdout and stderr into log_path; calls on_line(line) for each stdout line.
    Returns the exit status."""
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(shlex.quote(shown_arg(c)) for c in cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1)
        for line in proc.stdout:
            log.write(line)
            on_line(line.rstrip("\n"))
        return proc.wait()


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"cpu": cpu, "cpus": len(os.sched_getaffinity(0)),
            "kernel": f"{platform.system()} {platform.release()}"}
    try:
        v = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout
        m = re.search(r"Swift version (\S+)", v)
        if m:
            info["swift"] = m.group(1)
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if commit:
            info["commit"] = commit + (" + uncommitted changes" if dirty else "")
    except OSError:
        pass
    return info


def cmd_run(args):
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H%MZ") + ("-quick" if args.quick else "")
    out_dir = os.path.join(args.results_dir, stamp)
    n = 1
    while os.path.exists(out_dir):  # two runs in one minute: keep both
        n += 1
        out_dir = os.path.join(args.results_dir, f"{stamp}-{n}")
    stamp = os.path.basename(out_dir)
    os.makedirs(out_dir)
    tmp = {k: os.path.join(out_dir, f".{k}.json") for k in ("c", "http", "swift")}

    c_cmd = [os.path.join(args.bin_dir, "cq-bench")] + (["--quick"] if args.quick else [])
    c_cmd += shlex.split(args.c_args)
    http_conns = "16,64,256"
    http_extra = shlex.split(args.http_args)
    if "--conns" in http_extra:
        http_conns = http_extra[http_extra.index("--conns") + 1]
    http_cmd = [sys.executable, os.path.join(ROOT, "bench", "http_bench.py"), "--bin-dir",
                args.bin_dir, "--verbose"] + (["--quick"] if args.quick else []) + http_extra
    swift_cmd = [args.swift_bench] + (["--quick"] if args.quick else [])
    swift_cmd += shlex.split(args.swift_args)

    skip = set(args.skip.split(",")) if args.skip else set()
    steps = {}
    try:
        if "c" not in skip:
            names = positional(shlex.split(args.c_args))
            steps["c"] = len(names) if names else len(set(list_workloads(c_cmd[:1])))
        if "http" not in skip:
            reps = 1 if args.quick else 5  # http_bench.py's default
            if "--reps" in http_extra:
                reps = int(http_extra[http_extra.index("--reps") + 1])
            runtimes = 1 if "--runtime" in http_extra and \
                http_extra[http_extra.index("--runtime") + 1] != "both" else 2
            steps["http"] = len(http_conns.split(",")) * reps * runtimes
        if "swift" not in skip:
            names = positional(shlex.split(args.swift_args))
            steps["swift"] = len(names) if names else len(list_workloads(swift_cmd[:1]))
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError) as e:
        print(f"bench_report: cannot list the workloads: {e}", file=sys.stderr)
        return 2
    progress = Progress(sum(steps.values()))
    status = {}
    load_start = os.getloadavg()[0]

    if "c" in steps:
        def c_line(line):
            m = re.match(r"== (\S+?):? ", line)
            if m and m.group(1) != "summary":
                progress.next(f"C: {m.group(1)}")
        status["c"] = run_tool(c_cmd + ["--json", tmp["c"]], os.path.join(out_dir, "cq-bench.txt"),
                               progress, c_line)

    if "http" in steps:
        conns = http_conns.split(",")
        state = {"done": 0}
        per_conn = steps["http"] // max(len(conns), 1)

        def label():
            i = min(state["done"] // max(per_conn, 1), len(conns) - 1)
            return f"HTTP: wrk, {conns[i]} connections"
        progress.next(label())

        def http_line(line):
            if re.match(r"\s+\S+\s+c=\d+\s+rep \d+:", line):
                state["done"] += 1
                if state["done"] < steps["http"]:
                    progress.next(label())
        status["http"] = run_tool(http_cmd + ["--json", tmp["http"]],
                                  os.path.join(out_dir, "http.txt"), progress, http_line)

    if "swift" in steps:
        def swift_line(line):
            m = re.match(r"== (\S+): ", line)
            if m and m.group(1) != "summary":
                progress.next(f"Swift: {m.group(1)}")
        status["swift"] = run_tool(swift_cmd + ["--json", tmp["swift"]],
                                   os.path.join(out_dir, "swift.txt"), progress, swift_line)
    progress.clear()

    machine = machine_info()
    # Other work on the machine shows in the times (not in the ratios as much): keep the load.
    machine["load_avg_1min"] = [round(load_start, 1), round(os.getloadavg()[0], 1)]
    results = {"date": now.strftime("%Y-%m-%d %H:%M UTC"), "quick": args.quick,
               "machine": machine, "command": "make bench" + (" QUICK=1" if args.quick
                                                                     else ""),
               "wall_s": round(time.monotonic() - progress.t0, 1), "tables": []}
    logs = {"c": "cq-bench.txt", "http": "http.txt", "swift": "swift.txt"}
    ok = True
    for key in ("c", "http", "swift"):
        if key not in status:
            continue
        rc = status[key]
        if key == "http" and rc == 77:
            progress.say("bench_report: wrk is not installed: the HTTP table is skipped")
            continue
        doc = None
        if os.path.exists(tmp[key]):
            with open(tmp[key]) as f:
                doc = json.load(f)
            os.remove(tmp[key])
        if rc != 0 or doc is None:
            ok = False
            progress.say(f"bench_report: {logs[key]}: the tool exited with status {rc}"
                         + ("" if doc else " and wrote no results")
                         + f"; see {os.path.join(out_dir, logs[key])}")
        if doc is not None:
            results["tables"] += tables_of(key, doc, rc, logs[key])
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    write_report(out_dir, results)
    if not args.quick:
        write_latest(args.results_dir, stamp, results)
        update_doc(args.results_dir, stamp, results)
    print(f"\nbench_report: {os.path.relpath(out_dir, ROOT)}/README.md, results.json and "
          f"{len(results['tables'])} chart(s); {results['wall_s']:.0f} s"
          + ("" if args.quick else "; bench/results/latest and docs/benchmarks.md updated"))
    print_tables(results)
    return 0 if ok else 1


# ---- tables ----------------------------------------------------------------------------------

TABLES = {
    # key: (file stem, title, ours, theirs)
    "c": ("c-core", "C core vs libdispatch (cq-bench)", "CQueueCore", "libdispatch"),
    "http": ("http", "HTTP server on READ sources vs libdispatch (http_bench.py, wrk)",
             "CQueueCore", "libdispatch"),
    "Swift layer vs the Dispatch overlay":
        ("swift-dispatch", "Swift layer vs the Dispatch overlay (sq-swift-bench)",
         "SwiftQueues", "Dispatch"),
    "Swift concurrency: our executors vs the default executor":
        ("swift-concurrency", "Swift concurrency: our executors vs the default executor "
         "(sq-swift-bench)", "SwiftQueues", "default executor"),
    "SQOperationQueue vs Foundation's OperationQueue":
        ("swift-operations", "SQOperationQueue vs Foundation's OperationQueue (sq-swift-bench)",
         "SwiftQueues", "Foundation"),
}


def tables_of(key, doc, rc, log):
    """Splits one tool's JSON into report tables."""
    common = {"verified": bool(doc.get("verified")) and rc == 0, "log": log,
              "reps": doc.get("reps")}
    if key in ("c", "http"):
        stem, title, ours, theirs = TABLES[key]
        return [dict(common, id=stem, title=title, ours=ours, theirs=theirs, rows=doc["rows"])]
    out = []
    for name in dict.fromkeys(r["table"] for r in doc["rows"]):
        stem, title, ours, theirs = TABLES.get(name, (re.sub(r"\W+", "-", name).lower(), name,
                                                      "SwiftQueues", "theirs"))
        rows = [r for r in doc["rows"] if r["table"] == name]
        out.append(dict(common, id=stem, title=title, ours=ours, theirs=theirs, rows=rows))
    return out


def fmt(v):
    """A figure with about three significant digits."""
    if v is None:
        return "–"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_ratio(r):
    if r is None:
        return "–"
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 0.1:
        return f"{r:.2f}×"
    return f"{r:.2g}×"


def chart_rows(table):
    rows = [r for r in table["rows"] if r["ours"] is not None or r["theirs"] is not None]
    if table["id"] == "http":  # the chart keeps throughput, latency p50/p99 and CPU per request
        rows = [r for r in rows if r["metric"] in ("rps", "p50", "p99", "cpu_us")]
    return rows


def print_tables(results):
    for t in results["tables"]:
        print(f"\n{t['title']}: ratio above 1 is better for us")
        for r in t["rows"]:
            theirs = fmt(r["theirs"]) if r["theirs"] is not None else r.get("note", "–")
            print(f"  {r['name']:<26} {r['unit']:<14} {fmt(r['ours']):>10} {theirs:>12} "
                  f"{fmt_ratio(r['ratio']):>10}")


def md_table(t):
    swift = any("allocs_ours" in r for r in t["rows"])
    rtt = any("core_rtt_ns" in r for r in t["rows"])
    head = (f"| workload | unit | {t['ours']} | {t['theirs']} | ratio | better |"
            + (" allocs/op ours | allocs/op theirs |" if swift else "")
            + (" core round trip ns |" if rtt else ""))
    lines = [head, "|---|---|---:|---:|---:|---|" + ("---:|---:|" if swift else "")
             + ("---:|" if rtt else "")]
    for r in t["rows"]:
        theirs = fmt(r["theirs"]) if r["theirs"] is not None else r.get("note", "–") or "–"
        name = r["name"]
        if r.get("theirs_name") and r["theirs_name"] != t["theirs"]:
            name += f" (vs {r['theirs_name']})"
        line = (f"| {name} | {r['unit']} | {fmt(r['ours'])} | {theirs} | "
                f"{fmt_ratio(r['ratio'])} | {r['better']} |")
        if swift:
            line += f" {fmt(r.get('allocs_ours'))} | {fmt(r.get('allocs_theirs'))} |"
        if rtt:
            line += f" {fmt(r.get('core_rtt_ns'))} |"
        if r.get("failed"):
            line += " **verification failed**"
        lines.append(line)
    return "\n".join(lines)


def machine_line(results):
    m = results["machine"]
    line = f"{m['cpu']}, {m['cpus']} CPUs, {m['kernel']}"
    if m.get("swift"):
        line += f", Swift {m['swift']}"
    if m.get("load_avg_1min"):
        line += ", load average {} to {}".format(*m["load_avg_1min"])
    return line


def write_report(out_dir, results):
    for t in results["tables"]:
        with open(os.path.join(out_dir, t["id"] + ".svg"), "w") as f:
            f.write(svg_chart(t, results))
    m = results["machine"]
    parts = [f"# Benchmarks, {results['date']}" + (" (QUICK: small sizes)" if results["quick"]
                                                   else ""),
             "",
             f"Machine: {machine_line(results)}. Commit: {m.get('commit', '?')}. "
             f"Command: `{results['command']}` ({results['wall_s']:.0f} s).",
             "",
             "Each chart shows, per workload, our figure and theirs as two bars relative to the "
             "larger of the two (log scale where a table's ratios span more than 10×), with the "
             "measured values. **Ratio**: how many times better ours is (theirs/ours for "
             "lower-is-better figures, ours/theirs for higher-is-better ones): above 1 is better "
             "for us. Every figure is a median over the repetitions. The full output of each "
             "tool is in the `.txt` files beside this one; how each workload is measured is in "
             "bench/README.md and Benchmarks/README.md."]
    for t in results["tables"]:
        parts += ["", f"## {t['title']}", "",
                  f"![{t['title']}]({t['id']}.svg)", "",
                  md_table(t), "",
                  f"Median of {t['reps']} repetitions; full output: [{t['log']}]({t['log']})."
                  + ("" if t["verified"] else " **Some runs failed verification.**")]
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(parts) + "\n")


def write_latest(results_dir, stamp, results):
    latest = os.path.join(results_dir, "latest")
    os.makedirs(latest, exist_ok=True)
    parts = ["# Latest full benchmark run", "",
             f"[{stamp}](../{stamp}/README.md): {results['date']}, {machine_line(results)}, "
             f"commit {results['machine'].get('commit', '?')}. This file is rewritten by every "
             "full `make bench`; the results stay in their dated folder.", ""]
    for t in results["tables"]:
        parts += [f"![{t['title']}](../{stamp}/{t['id']}.svg)", ""]
    with open(os.path.join(latest, "README.md"), "w") as f:
        f.write("\n".join(parts))


def update_doc(results_dir, stamp, results):
    if not os.path.exists(DOC):
        return
    with open(DOC) as f:
        text = f.read()
    rel = os.path.relpath(os.path.join(results_dir, stamp), os.path.dirname(DOC))
    block = [DOC_BEGIN, "",
             f"Latest full run: {results['date']} on {machine_line(results)}, commit "
             f"{results['machine'].get('commit', '?')} ([tables and full output]({rel}/README.md)). "
             "Ratio above 1 is better for us.", ""]
    for t in results["tables"]:
        block += [f"![{t['title']}]({rel}/{t['id']}.svg)", ""]
    block.append(DOC_END)
    new = "\n".join(block)
    if DOC_BEGIN in text and DOC_END in text:
        head, rest = text.split(DOC_BEGIN, 1)
        tail = rest.split(DOC_END, 1)[1]
        text = head + new + tail
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    with open(DOC, "w") as f:
        f.write(text)


# ---- the charts ------------------------------------------------------------------------------

def esc(s):
    return html.escape(str(s), quote=True)


def svg_chart(t, results):
    """Horizontal bars, ours above theirs, per workload; each pair relative to its larger value."""
    rows = chart_rows(t)
    ratios = []
    for r in rows:
        vals = [v for v in (r["ours"], r["theirs"]) if v is not None and v > 0]
        if len(vals) == 2:
            ratios.append(max(vals) / min(vals))
    span = max(ratios, default=1)
    log = span > 10
    decades = min(max(1, math.ceil(math.log10(span) - 1e-9)), 7) if log else 0

    name_w, bar_w, value_w, ratio_w = 190, 380, 150, 80
    left = name_w + 10
    width = left + bar_w + value_w + ratio_w
    bar_h, pair_gap, top = 11, 10, 78
    row_h = 2 * bar_h + 2 + pair_gap
    height = top + len(rows) * row_h + 34

    def length(v, vmax):
        if v is None or vmax <= 0 or v <= 0:
            return 0.0
        rel = v / vmax
        if not log:
            return bar_w * rel
        return max(1.0, bar_w * (1 + math.log10(rel) / decades)) if rel >= 10 ** -decades else 1.0

    m = results["machine"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           "<style>.o{fill:#2b6cb0}.t{fill:#dd8a2d}.g{stroke:#ddd}.s{fill:#555}"
           ".b{font-weight:bold}.r{text-anchor:end}</style>",
           f'<rect width="{width}" height="{height}" fill="#fff"/>',
           f'<text x="8" y="18" font-size="14" class="b">{esc(t["title"])}</text>',
           f'<text x="8" y="35" class="s">{esc(machine_line(results))}; {esc(results["date"])}'
           f'{" (QUICK)" if results["quick"] else ""}; median of {esc(t["reps"])}</text>',
           f'<rect x="8" y="45" width="10" height="10" class="o"/>'
           f'<text x="22" y="54">{esc(t["ours"])}</text>',
           f'<rect x="120" y="45" width="10" height="10" class="t"/>'
           f'<text x="134" y="54">{esc(t["theirs"])}</text>',
           f'<text x="260" y="54" class="s">bars: each pair relative to its larger value'
           f'{f", log scale ({decades} decades)" if log else ""}; ratio: above 1 is better for us'
           f'</text>']
    # grid: linear quarters, or one line per decade
    marks = ([(bar_w * k / 4, f"{k * 25}%") for k in range(5)] if not log else
             [(bar_w * (1 - d / decades), "1" if d == 0 else
               "1/" + ["10", "100", "1k", "10k", "100k", "1M", "10M"][d - 1])
              for d in range(decades + 1)])
    y0, y1 = top - 6, top + len(rows) * row_h - pair_gap + 4
    for x, label in marks:
        out.append(f'<line x1="{left + x:.1f}" y1="{y0}" x2="{left + x:.1f}" y2="{y1}" class="g"/>'
                   f'<text x="{left + x:.1f}" y="{y1 + 12}" class="s" text-anchor="middle">'
                   f'{label}</text>')
    out.append(f'<text x="{width - 8}" y="{top - 10}" class="r b">ratio</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        vmax = max(v for v in (r["ours"], r["theirs"], 0) if v is not None)
        name = r["name"]
        out.append(f'<text x="{name_w}" y="{y + bar_h}" class="r">{esc(name)}</text>'
                   f'<text x="{name_w}" y="{y + 2 * bar_h + 2}" class="r s">{esc(r["unit"])}'
                   f'{", higher is better" if r["better"] == "higher" else ""}</text>')
        for j, (key, cls) in enumerate((("ours", "o"), ("theirs", "t"))):
            v = r[key]
            by = y + j * (bar_h + 2)
            w = length(v, vmax)
            if w > 0:
                out.append(f'<rect x="{left}" y="{by}" width="{w:.1f}" height="{bar_h}" '
                           f'class="{cls}"/>')
            if v is not None:
                label = fmt(v)
            else:
                label = (r.get("note") or "not run") if key == "theirs" else "not run"
            if key == "theirs" and r.get("theirs_name") and r["theirs_name"] != t["theirs"]:
                label += f" ({r['theirs_name']})"
            out.append(f'<text x="{left + w + 4:.1f}" y="{by + bar_h - 2}">{esc(label)}</text>')
        ratio = r["ratio"]
        color = "#2f855a" if ratio is not None and ratio >= 1 else "#c53030"
        out.append(f'<text x="{width - 8}" y="{y + bar_h + 6}" class="r b" fill="{color}">'
                   f'{esc(fmt_ratio(ratio))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- self-test (ctest bench_report_selftest) -------------------------------------------------

def cmd_selftest():
    """Draws made-up tables (linear and log scale, a missing side, a zero, higher-is-better)
    into a temporary folder and checks that every chart is well-formed SVG with a bar per figure
    and that the README has a table row per workload. Exit status 0 or 1."""
    import tempfile
    import xml.etree.ElementTree as ET
    row = lambda name, o, t, better="lower", **kw: dict(
        name=name, unit="ns/op", ours=o, theirs=t, better=better,
        ratio=None if not (o and t) else (t / o if better == "lower" else o / t), **kw)
    results = {"date": "2026-01-01 00:00 UTC", "quick": True, "command": "selftest",
               "wall_s": 0, "machine": {"cpu": "Test CPU <&>", "cpus": 2, "kernel": "Linux x"},
               "tables": [
                   {"id": "linear", "title": "Linear", "ours": "A", "theirs": "B", "reps": 3,
                    "verified": True, "log": "x.txt",
                    "rows": [row("one", 1.0, 2.0), row("two", 5.0, 4.0, "higher"),
                             row("zero", 0, 3.0)]},
                   {"id": "log", "title": "Log", "ours": "A", "theirs": "B", "reps": 1,
                    "verified": False, "log": "y.txt",
                    "rows": [row("big", 0.01, 2000.0), row("missing", 3.0, None, note="DNF"),
                             row("other", 2.0, 1.0, theirs_name="C", allocs_ours=1,
                                 allocs_theirs=2)]}]}
    failures = []
    with tempfile.TemporaryDirectory() as d:
        write_report(d, results)
        readme = open(os.path.join(d, "README.md")).read()
        for t in results["tables"]:
            svg = ET.parse(os.path.join(d, t["id"] + ".svg")).getroot()
            rects = [e for e in svg.iter() if e.tag.endswith("rect") and
                     e.get("class") in ("o", "t")]
            figures = sum((r["ours"] or 0) > 0 for r in t["rows"]) + \
                sum((r["theirs"] or 0) > 0 for r in t["rows"])
            if len(rects) - 2 != figures:  # minus the two legend squares
                failures.append(f"{t['id']}.svg: {len(rects) - 2} bars for {figures} figures")
            text = " ".join("".join(e.itertext()) for e in svg.iter() if e.tag.endswith("text"))
            if ("decades" in text) != (t["id"] == "log"):
                failures.append(f"{t['id']}.svg: log scale chosen wrongly")
            for r in t["rows"]:
                if f"| {r['name']}" not in readme:
                    failures.append(f"README.md: no row for {r['name']}")
    for f in failures:
        print("bench_report selftest: FAILED: " + f)
    if not failures:
        print("bench_report selftest: charts and tables ok")
    return 1 if failures else 0


# ---- main ------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the tables and write the report")
    run.add_argument("--quick", action="store_true", help="small sizes (each tool's --quick)")
    run.add_argument("--bin-dir", default=os.path.join(ROOT, "build-bench", "bench"),
                     help="where cq-bench and the HTTP servers are")
    run.add_argument("--swift-bench",
                     default=os.path.join(ROOT, ".build-bench-swift", "release", "sq-swift-bench"))
    run.add_argument("--results-dir", default=os.path.join(ROOT, "bench", "results"))
    run.add_argument("--c-args", default="", help="more arguments for cq-bench (BENCH_ARGS)")
    run.add_argument("--http-args", default="", help="more arguments for http_bench.py")
    run.add_argument("--swift-args", default="", help="more arguments for sq-swift-bench")
    run.add_argument("--skip", default="", help="tables to leave out: c, http, swift (commas)")
    rep = sub.add_parser("report", help="redraw README.md and the charts from DIR/results.json")
    rep.add_argument("--latest", action="store_true",
                     help="also point bench/results/latest and docs/benchmarks.md at DIR")
    rep.add_argument("dir")
    sub.add_parser("selftest", help="draw made-up tables and check the output")
    args = ap.parse_args()
    if args.command == "run":
        return cmd_run(args)
    if args.command == "selftest":
        return cmd_selftest()
    with open(os.path.join(args.dir, "results.json")) as f:
        results = json.load(f)
    write_report(args.dir, results)
    if args.latest:
        results_dir, stamp = os.path.split(os.path.abspath(args.dir).rstrip("/"))
        write_latest(results_dir, stamp, results)
        update_doc(results_dir, stamp, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
