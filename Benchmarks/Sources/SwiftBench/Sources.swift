// Source workloads: a repeating timer and a user-data source, side by side with Dispatch's.

import Dispatch
import Foundation
import SwiftQueues

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add(_ k: Int) { lock.lock(); n += k; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}

/// Process CPU time (user + system) in nanoseconds.
func processCPUNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A timer firing every millisecond until it has fired `n` times (missed fires count as the
/// data says). The figure is the process CPU time per fire: the wall time is set by the timer.
func timerWorkload() -> Workload {
    Workload(
        name: "timer_1ms", title: "a timer source firing every 1 ms: process CPU time per fire",
        unit: "ns CPU/fire", ops: quick ? 200 : 1_000, goal: nil,
        ours: { n in
            let done = DispatchSemaphore(value: 0)
            let fired = Counter()
            let q = SQQueue(label: "bench.timer")
            let t = SQSource.makeTimerSource(queue: q)
            t.schedule(deadline: .now() + .milliseconds(1), repeating: .milliseconds(1),
                       leeway: .microseconds(100))
            t.setEventHandler {
                fired.add(Int(t.data))
                if fired.value >= n { t.cancel() }
            }
            t.setCancelHandler { done.signal() }
            let c0 = processCPUNs()
            t.activate()
            done.wait()
            let c = processCPUNs() - c0
            check(fired.value >= n, "SwiftQueues timer fired \(fired.value) of \(n)")
            return c
        },
        dispatch: { n in
            let done = DispatchSemaphore(value: 0)
            let fired = Counter()
            let q = DispatchQueue(label: "bench.timer")
            nonisolated(unsafe) let t = DispatchSource.makeTimerSource(queue: q)
            t.schedule(deadline: .now() + .milliseconds(1), repeating: .milliseconds(1),
                       leeway: .microseconds(100))
            t.setEventHandler {
                fired.add(Int(t.data))
                if fired.value >= n { t.cancel() }
            }
            t.setCancelHandler { done.signal() }
            let c0 = processCPUNs()
            t.activate()
            done.wait()
            let c = processCPUNs() - c0
            check(fired.value >= n, "Dispatch timer fired \(fired.value) of \(n)")
            return c
        })
}

/// A user-data add source merged `n` times from four threads; the handler sums the data. The
/// figure is the wall time per merge until every merge has been delivered.
func userDataWorkload() -> Workload {
    Workload(
        name: "user_data_add", title: "a user-data add source merged from four threads",
        unit: "ns/merge", ops: quick ? 100_000 : 1_000_000, goal: nil,
        ours: { n in
            let sum = Counter()
            let done = DispatchSemaphore(value: 0)
            let q = SQQueue(label: "bench.data")
            let s = SQSource.makeUserDataAddSource(queue: q)
            s.setEventHandler {
                sum.add(Int(s.data))
                if sum.value == n { done.signal() }
            }
            s.activate()
            let t0 = nowNs()
            DispatchQueue.concurrentPerform(iterations: 4) { k in
                for _ in 0..<(n / 4 + (k < n % 4 ? 1 : 0)) { s.add(data: 1) }
            }
            done.wait()
            let t = nowNs() - t0
            s.cancel()
            check(sum.value == n, "SwiftQueues user data: \(sum.value) of \(n)")
            return t
        },
        dispatch: { n in
            let sum = Counter()
            let done = DispatchSemaphore(value: 0)
            let q = DispatchQueue(label: "bench.data")
            nonisolated(unsafe) let s = DispatchSource.makeUserDataAddSource(queue: q)
            s.setEventHandler {
                sum.add(Int(s.data))
                if sum.value == n { done.signal() }
            }
            s.activate()
            let t0 = nowNs()
            DispatchQueue.concurrentPerform(iterations: 4) { k in
                for _ in 0..<(n / 4 + (k < n % 4 ? 1 : 0)) { s.add(data: 1) }
            }
            done.wait()
            let t = nowNs() - t0
            s.cancel()
            check(sum.value == n, "Dispatch user data: \(sum.value) of \(n)")
            return t
        })
}

func sourceWorkloads() -> [Workload] { [timerWorkload(), userDataWorkload()] }
