// sq-swift-bench: the same Swift closures through SwiftQueues and through Apple's Dispatch
// overlay, in one process, alternating run by run.
//
//   swift run -c release --package-path Benchmarks sq-swift-bench [--quick] [--reps N]
//       [--only ours|dispatch] [--json FILE] [--list] [NAME...]
//
// For each workload: the median time per operation of each runtime (min and max in brackets),
// the ratio Dispatch/SwiftQueues (above 1 is better for us), the goal from issue 10, the
// allocations per operation (malloc calls counted in-process: stable on a noisy machine) and
// the core round trip measured before each repetition (see coreRoundTrip()).
// Every run checks its own result; a failed check prints FAILED and makes the exit status 1.

import CoreRoundTrip
import CQueueCore
import Dispatch
import Foundation
import MallocCount
import SwiftQueues

// MARK: - Options

nonisolated(unsafe) var quick = false
nonisolated(unsafe) var reps = 5
nonisolated(unsafe) var selected: Set<String> = []
nonisolated(unsafe) var only: String? = nil  // "ours" or "dispatch": measure one side only
nonisolated(unsafe) var jsonPath: String? = nil  // --json FILE: the summary rows as JSON
nonisolated(unsafe) var listOnly = false
do {
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": quick = true; reps = 3
        case "--reps": reps = Int(args.popFirst() ?? "") ?? reps
        case "--only": only = args.popFirst()
        case "--json":
            guard let path = args.popFirst() else {
                FileHandle.standardError.write("sq-swift-bench: --json needs a file name\n".data(using: .utf8)!)
                exit(2)
            }
            jsonPath = path
        case "--list": listOnly = true
        case "--help", "-h":
            print("usage: sq-swift-bench [--quick] [--reps N] [--only ours|dispatch] [--json FILE] [--list] [NAME...]")
            print("  --json FILE  also write the summary rows to FILE as JSON (for scripts/bench_report.py)")
            print("  --list       list the workloads, one per line: name, then the table it belongs to")
            exit(0)
        default: selected.insert(arg)
        }
    }
}

@inline(never) func sink<T>(_ value: T) { _ = value }

func nowNs() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

nonisolated(unsafe) var failures = 0

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        print("   FAILED: \(message())")
        failures += 1
    }
}

// MARK: - Harness

struct Measure {
    let isOurs: Bool
    var ns: [Double] = []       // per operation, one entry per repetition
    var allocs: [Double] = []   // per operation
}

/// A cache line's round trip between the first two CPUs, in ns: the median of five probes of
/// 2,000 rounds (a few ms); nil with fewer than two CPUs. Measured before each repetition: on
/// a virtual machine the host moves the vCPUs between cores that share a cache and cores that
/// do not, and workloads that hand memory between threads follow (see core_round_trip.h).
func coreRoundTrip() -> Double? {
    let ns = core_round_trip_median_ns()
    return ns > 0 ? ns : nil
}

/// One side of a workload: runs `ops` operations, returns the nanoseconds the timed part took.
typealias Side = (_ ops: Int) -> UInt64

struct Workload {
    let name: String
    let title: String
    let unit: String
    let ops: Int
    let goal: Double?        // the ratio Dispatch/ours to reach
    let ours: Side
    let dispatch: Side
    var other = "Dispatch"   // what the second column measures (e.g. Swift's default executor)
}

struct Row {
    let name: String
    let unit: String
    let ours: Measure
    let dispatch: Measure
    let goal: Double?
    let other: String
    let roundTrips: [Double]  // coreRoundTrip() before each repetition
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[s.count / 2]
}

func run(_ w: Workload) -> Row {
    print("== \(w.name): \(w.title) (\(w.ops) operations)")
    fflush(nil)  // into a pipe too: scripts/bench_report.py shows this line as its progress
    var ours = Measure(isOurs: true), theirs = Measure(isOurs: false)
    if only != "dispatch" { _ = w.ours(max(w.ops / 10, 1)) }  // warm-up
    if only != "ours" { _ = w.dispatch(max(w.ops / 10, 1)) }
    func measure(_ side: Side, into m: inout Measure) {
        if let only, (only == "ours") != (m.isOurs) {
            return
        }
        let a0 = malloc_count_total()
        let ns = side(w.ops)
        let a1 = malloc_count_total()
        m.ns.append(Double(ns) / Double(w.ops))
        m.allocs.append(Double(a1 - a0) / Double(w.ops))
        usleep(10_000)  // let the other runtime's threads park
    }
    var roundTrips: [Double] = []
    for rep in 0..<reps {
        if let rtt = coreRoundTrip() {
            roundTrips.append(rtt)
        }
        if rep % 2 == 0 {
            measure(w.ours, into: &ours)
            measure(w.dispatch, into: &theirs)
        } else {
            measure(w.dispatch, into: &theirs)
            measure(w.ours, into: &ours)
        }
    }
    let r = Row(name: w.name, unit: w.unit, ours: ours, dispatch: theirs, goal: w.goal, other: w.other,
                roundTrips: roundTrips)
    let fmt = { (m: Measure) in
        String(format: "%10.2f ", median(m.ns)) + w.unit
            + String(format: "  (min %.2f, max %.2f)  %.2f allocations/op", m.ns.min() ?? .nan,
                     m.ns.max() ?? .nan, median(m.allocs))
    }
    print("   SwiftQueues \(fmt(ours))")
    print("   \(w.other.padding(toLength: 11, withPad: " ", startingAt: 0)) \(fmt(theirs))")
    if !roundTrips.isEmpty {
        let list = { (xs: [Double]) in xs.map { String(format: "%.0f", $0) }.joined(separator: ", ") }
        print("   core round trip before each repetition: \(list(roundTrips)) ns; "
              + "SwiftQueues \(list(ours.ns)), \(w.other) \(list(theirs.ns)) \(w.unit)")
    }
    return r
}

// MARK: - Main

// The tables, by what the second column measures (the report draws one chart per table).
let tables: [(name: String, theirs: String, workloads: [Workload])] = [
    ("Swift layer vs the Dispatch overlay", "Dispatch", queueWorkloads() + sourceWorkloads()
        + [operationAddFloorWorkload()]),
    ("Swift concurrency: our executors vs the default executor", "default executor",
     concurrencyWorkloads()),
    ("SQOperationQueue vs Foundation's OperationQueue", "Foundation", operationWorkloads()),
]
if listOnly {
    for t in tables {
        for w in t.workloads { print("\(w.name)\t\(t.name)") }
    }
    exit(0)
}
var rows: [Row] = []
var rowTable: [String] = []  // the table of each row
let started = nowNs()
for t in tables {
    for w in t.workloads where selected.isEmpty || selected.contains(w.name) {
        rows.append(run(w))
        rowTable.append(t.name)
    }
}

print("")
print("== summary (median of \(reps); ratio = Dispatch/SwiftQueues, above 1 is better for us; allocations per operation)")
func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, n - s.count))
    return left ? s + fill : fill + s
}
print(pad("workload", 22, left: true) + " " + pad("unit", 13, left: true) + pad("SwiftQueues", 13)
      + pad("Dispatch", 13) + pad("ratio", 9) + pad("goal", 8) + pad("met", 5)
      + pad("alloc sq", 10) + pad("alloc d", 9) + pad("rtt ns", 8))
for r in rows {
    let o = median(r.ours.ns), d = median(r.dispatch.ns)
    let ratio = d / o
    let goal = r.goal.map { String(format: ">= %.0fx", $0) } ?? "-"
    let met = r.goal.map { ratio >= $0 ? "yes" : "NO" } ?? "-"
    print(pad(r.name, 22, left: true) + " " + pad(r.unit, 13, left: true)
          + pad(String(format: "%.2f", o), 13) + pad(String(format: "%.2f", d), 13)
          + pad(String(format: "%.2fx", ratio), 9) + pad(goal, 8) + pad(met, 5)
          + pad(String(format: "%.2f", median(r.ours.allocs)), 10)
          + pad(String(format: "%.2f", median(r.dispatch.allocs)), 9)
          + pad(String(format: "%.0f", median(r.roundTrips)), 8)
          + (r.other == "Dispatch" ? "" : "  (second column: \(r.other))"))
}

/// The summary as JSON (every figure lower-is-better; ratio = theirs/ours, above 1 is better for us).
@MainActor func writeJSON(to path: String) -> Bool {
    func number(_ x: Double) -> String { x.isFinite ? String(format: "%.6g", x) : "null" }
    func text(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where c.value < 0x20: out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }
    var lines: [String] = []
    for (i, r) in rows.enumerated() {
        let o = r.ours.ns.isEmpty ? Double.nan : median(r.ours.ns)
        let d = r.dispatch.ns.isEmpty ? Double.nan : median(r.dispatch.ns)
        let table = tables.first { $0.name == rowTable[i] }!
        let theirs = table.theirs == "Foundation" ? "Foundation"
            : r.other == "default exec" ? "default executor" : r.other
        let allocO = r.ours.allocs.isEmpty ? Double.nan : median(r.ours.allocs)
        let allocD = r.dispatch.allocs.isEmpty ? Double.nan : median(r.dispatch.allocs)
        lines.append("    {\"name\": \(text(r.name)), \"table\": \(text(rowTable[i])), "
            + "\"unit\": \(text(r.unit)), \"ours\": \(number(o)), \"theirs\": \(number(d)), "
            + "\"ratio\": \(number(o > 0 && d > 0 ? d / o : .nan)), \"better\": \"lower\", "
            + "\"theirs_name\": \(text(theirs)), \"goal_ratio\": \(number(r.goal ?? .nan)), "
            + "\"allocs_ours\": \(number(allocO)), \"allocs_theirs\": \(number(allocD)), "
            + "\"core_rtt_ns\": \(number(median(r.roundTrips)))}")
    }
    let json = "{\n  \"tool\": \"sq-swift-bench\",\n  \"ours\": \"SwiftQueues\",\n"
        + "  \"quick\": \(quick),\n  \"reps\": \(reps),\n"
        + "  \"wall_s\": \(String(format: "%.1f", Double(nowNs() - started) / 1e9)),\n"
        + "  \"verified\": \(failures == 0),\n  \"rows\": [\n"
        + lines.joined(separator: ",\n") + "\n  ]\n}\n"
    return FileManager.default.createFile(atPath: path, contents: json.data(using: .utf8))
}
if let jsonPath, !writeJSON(to: jsonPath) {
    FileHandle.standardError.write("sq-swift-bench: cannot write \(jsonPath)\n".data(using: .utf8)!)
    exit(2)
}
if failures > 0 {
    print("\(failures) check(s) FAILED")
    exit(1)
}
