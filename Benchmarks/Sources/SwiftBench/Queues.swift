// The queue workloads. Defined in functions outside main.swift: closures written in top-level
// code would be main-actor isolated, and every call would check its executor.

import CQueueCore
import Dispatch
import Foundation
import SwiftQueues


final class Box: @unchecked Sendable {
    var value = 0
}

func globalAsyncWorkload() -> Workload {
    Workload(
    name: "async_global", title: "closures onto the default global queue in a group, then wait",
    unit: "ns/op", ops: quick ? 100_000 : 1_000_000, goal: 3,
    ours: { n in
        let g = SQGroup()
        let q = SQQueue.global()
        let t0 = nowNs()
        for i in 0..<n { q.async(group: g) { sink(i) } }
        g.wait()
        return nowNs() - t0
    },
    dispatch: { n in
        let g = DispatchGroup()
        let q = DispatchQueue.global()
        let t0 = nowNs()
        for i in 0..<n { q.async(group: g) { sink(i) } }
        g.wait()
        return nowNs() - t0
    })
}

func serialAsyncWorkload() -> Workload {
    Workload(
    name: "async_serial", title: "closures onto one serial queue, then one sync (FIFO checked)",
    unit: "ns/op", ops: quick ? 100_000 : 1_000_000, goal: 3,
    ours: { n in
        let q = SQQueue(label: "bench.serial")
        let box = Box()
        let t0 = nowNs()
        for i in 0..<n {
            q.async {
                if box.value == i { box.value += 1 }
            }
        }
        q.sync {}
        let t = nowNs() - t0
        check(box.value == n, "SwiftQueues serial order: \(box.value) of \(n)")
        return t
    },
    dispatch: { n in
        let q = DispatchQueue(label: "bench.serial")
        let box = Box()
        let t0 = nowNs()
        for i in 0..<n {
            q.async {
                if box.value == i { box.value += 1 }
            }
        }
        q.sync {}
        let t = nowNs() - t0
        check(box.value == n, "Dispatch serial order: \(box.value) of \(n)")
        return t
    })
}

func syncCallsWorkload() -> Workload {
    Workload(
    name: "sync", title: "uncontended sync onto a serial queue, returning a value",
    unit: "ns/op", ops: quick ? 1_000_000 : 10_000_000, goal: 2,
    ours: { n in
        let q = SQQueue(label: "bench.sync")
        var total = 0
        let t0 = nowNs()
        for i in 0..<n { total &+= q.sync { i & 1 } }
        let t = nowNs() - t0
        check(total == n / 2, "SwiftQueues sync results")
        return t
    },
    dispatch: { n in
        let q = DispatchQueue(label: "bench.sync")
        var total = 0
        let t0 = nowNs()
        for i in 0..<n { total &+= q.sync { i & 1 } }
        let t = nowNs() - t0
        check(total == n / 2, "Dispatch sync results")
        return t
    })
}

nonisolated(unsafe) var performBuffer = [UInt8](repeating: 0, count: 10_000_000)

func checkPerform(_ n: Int, _ who: String) {
    var bad = 0
    for i in 0..<n where performBuffer[i] != UInt8(truncatingIfNeeded: i &* 7 &+ 1) { bad += 1 }
    check(bad == 0, "\(who) concurrentPerform: \(bad) wrong bytes")
    for i in 0..<n { performBuffer[i] = 0 }
}

func performWorkload() -> Workload {
    Workload(
    name: "concurrent_perform", title: "concurrentPerform, each iteration writes its own byte",
    unit: "ns/iteration", ops: quick ? 1_000_000 : 10_000_000, goal: 2,
    ours: { n in
        let t = performBuffer.withUnsafeMutableBufferPointer { buf -> UInt64 in
            nonisolated(unsafe) let b = buf
            let t0 = nowNs()
            SQQueue.concurrentPerform(iterations: n) { i in b[i] = UInt8(truncatingIfNeeded: i &* 7 &+ 1) }
            return nowNs() - t0
        }
        checkPerform(n, "SwiftQueues")
        return t
    },
    dispatch: { n in
        let t = performBuffer.withUnsafeMutableBufferPointer { buf -> UInt64 in
            nonisolated(unsafe) let b = buf
            let t0 = nowNs()
            DispatchQueue.concurrentPerform(iterations: n) { i in b[i] = UInt8(truncatingIfNeeded: i &* 7 &+ 1) }
            return nowNs() - t0
        }
        checkPerform(n, "Dispatch")
        return t
    })
}

final class PingPong<Q>: @unchecked Sendable {
    let a: Q, b: Q
    var left: Int
    let done = DispatchSemaphore(value: 0)
    init(a: Q, b: Q, hops: Int) { self.a = a; self.b = b; self.left = hops }
}

func sqHop(_ p: PingPong<SQQueue>, onA: Bool) {
    p.left -= 1
    if p.left == 0 { p.done.signal(); return }
    (onA ? p.b : p.a).async { sqHop(p, onA: !onA) }
}

func dHop(_ p: PingPong<DispatchQueue>, onA: Bool) {
    p.left -= 1
    if p.left == 0 { p.done.signal(); return }
    (onA ? p.b : p.a).async { dHop(p, onA: !onA) }
}

func pingpongWorkload() -> Workload {
    Workload(
    name: "pingpong", title: "ping-pong between two serial queues (each hop asyncs the next)",
    unit: "ns/hop", ops: quick ? 100_000 : 1_000_000, goal: 10,
    ours: { n in
        let p = PingPong(a: SQQueue(label: "a"), b: SQQueue(label: "b"), hops: n)
        let t0 = nowNs()
        p.a.async { sqHop(p, onA: true) }
        p.done.wait()
        return nowNs() - t0
    },
    dispatch: { n in
        let p = PingPong(a: DispatchQueue(label: "a"), b: DispatchQueue(label: "b"), hops: n)
        let t0 = nowNs()
        p.a.async { dHop(p, onA: true) }
        p.done.wait()
        return nowNs() - t0
    })
}

func workItemsWorkload() -> Workload {
    Workload(
    name: "work_item", title: "a new work item per submission onto a serial queue, wait on the last",
    unit: "ns/op", ops: quick ? 50_000 : 500_000, goal: nil,
    ours: { n in
        let q = SQQueue(label: "bench.items")
        let box = Box()
        var last: SQWorkItem?
        let t0 = nowNs()
        for _ in 0..<n {
            let item = SQWorkItem { box.value += 1 }
            q.async(execute: item)
            last = item
        }
        last?.wait()
        let t = nowNs() - t0
        check(box.value == n, "SwiftQueues work items: \(box.value) of \(n)")
        return t
    },
    dispatch: { n in
        let q = DispatchQueue(label: "bench.items")
        let box = Box()
        var last: DispatchWorkItem?
        let t0 = nowNs()
        for _ in 0..<n {
            let item = DispatchWorkItem { box.value += 1 }
            q.async(execute: item)
            last = item
        }
        last?.wait()
        let t = nowNs() - t0
        check(box.value == n, "Dispatch work items: \(box.value) of \(n)")
        return t
    })
}

// The Swift layer's overhead: SQQueue.async of a closure against cq_async_f of a C function,
// both onto the default global queue in a group ("Dispatch" column: the C call).
let noopC: cq_function_t = { _ in }
func overheadWorkload() -> Workload {
    Workload(
    name: "swift_overhead_async", title: "SwiftQueues closure async vs the C core's cq_group_async_f (second column)",
    unit: "ns/op", ops: quick ? 100_000 : 1_000_000, goal: nil,
    ours: { n in
        let g = SQGroup()
        let q = SQQueue.global()
        let t0 = nowNs()
        for i in 0..<n { q.async(group: g) { sink(i) } }
        g.wait()
        return nowNs() - t0
    },
    dispatch: { n in
        let g = cq_group_create()!
        let q = cq_get_global_queue(0, 0)
        let t0 = nowNs()
        for _ in 0..<n { cq_group_async_f(g, q, nil, noopC) }
        _ = cq_group_wait(g, CQ_TIME_FOREVER)
        let t = nowNs() - t0
        cq_release(UnsafeMutableRawPointer(g))
        return t
    },
    other: "C core")
}


func queueWorkloads() -> [Workload] {
    [globalAsyncWorkload(), serialAsyncWorkload(), syncCallsWorkload(), performWorkload(), pingpongWorkload(), workItemsWorkload(), overheadWorkload()]
}
