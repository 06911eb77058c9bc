// sq-swift-bench: the same Swift closures through SwiftQueues and through Apple's Dispatch
// overlay, in one process, alternating run by run.
//
//   swift run -c release --package-path Benchmarks sq-swift-bench [--quick] [--reps N] [NAME...]
//
// For each workload: the median time per operation of each runtime (min and max in brackets),
// the ratio Dispatch/SwiftQueues (above 1 is better for us), the goal from issue 10, and the
// allocations per operation (malloc calls counted in-process: stable on a noisy machine).
// Every run checks its own result; a failed check prints FAILED and makes the exit status 1.

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
do {
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": quick = true; reps = 3
        case "--reps": reps = Int(args.popFirst() ?? "") ?? reps
        case "--only": only = args.popFirst()
        case "--help", "-h":
            print("usage: sq-swift-bench [--quick] [--reps N] [--only ours|dispatch] [NAME...]")
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
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[s.count / 2]
}

func run(_ w: Workload) -> Row {
    print("== \(w.name): \(w.title) (\(w.ops) operations)")
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
    for rep in 0..<reps {
        if rep % 2 == 0 {
            measure(w.ours, into: &ours)
            measure(w.dispatch, into: &theirs)
        } else {
            measure(w.dispatch, into: &theirs)
            measure(w.ours, into: &ours)
        }
    }
    let r = Row(name: w.name, unit: w.unit, ours: ours, dispatch: theirs, goal: w.goal, other: w.other)
    let fmt = { (m: Measure) in
        String(format: "%10.2f ", median(m.ns)) + w.unit
            + String(format: "  (min %.2f, max %.2f)  %.2f allocations/op", m.ns.min() ?? .nan,
                     m.ns.max() ?? .nan, median(m.allocs))
    }
    print("   SwiftQueues \(fmt(ours))")
    print("   \(w.other.padding(toLength: 11, withPad: " ", startingAt: 0)) \(fmt(theirs))")
    return r
}

// MARK: - Main

let all = queueWorkloads() + sourceWorkloads() + concurrencyWorkloads()
    + operationWorkloads()
var rows: [Row] = []
for w in all where selected.isEmpty || selected.contains(w.name) {
    rows.append(run(w))
}

print("")
print("== summary (median of \(reps); ratio = Dispatch/SwiftQueues, above 1 is better for us; allocations per operation)")
func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, n - s.count))
    return left ? s + fill : fill + s
}
print(pad("workload", 22, left: true) + " " + pad("unit", 13, left: true) + pad("SwiftQueues", 13)
      + pad("Dispatch", 13) + pad("ratio", 9) + pad("goal", 8) + pad("met", 5)
      + pad("alloc sq", 10) + pad("alloc d", 9))
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
          + (r.other == "Dispatch" ? "" : "  (second column: \(r.other))"))
}
if failures > 0 {
    print("\(failures) check(s) FAILED")
    exit(1)
}
