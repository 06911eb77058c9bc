// SwiftQueues against Dispatch, Foundation's OperationQueue and Swift's default executor, one
// pair of benchmarks per operation ("<operation>/SwiftQueues" and "<operation>/<theirs>").
//
// Each benchmark does 1,000 operations per iteration (scalingFactor .kilo), so every figure is
// per operation: the wall-clock percentiles and the malloc calls per operation. The work that
// waits for the operations (one sync, one group wait) is inside the iteration, as it is in
// sq-swift-bench, so that the tasks are run, not only queued.

import Benchmark
import Dispatch
import Foundation
import SwiftQueues

final class Counter: @unchecked Sendable {
    var value = 0
}

@inline(never) func work(_ i: Int) -> Int { i & 1 }

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .milliseconds(1500),
        maxIterations: 1_000)

    // async onto one serial queue, then one sync behind them (FIFO checked by the count)
    Benchmark("async serial/SwiftQueues") { benchmark in
        let q = SQQueue(label: "ordo.serial")
        let c = Counter()
        for _ in benchmark.scaledIterations { q.async { c.value += 1 } }
        q.sync {}
        precondition(c.value == benchmark.scaledIterations.count)
    }
    Benchmark("async serial/Dispatch") { benchmark in
        let q = DispatchQueue(label: "ordo.serial")
        let c = Counter()
        for _ in benchmark.scaledIterations { q.async { c.value += 1 } }
        q.sync {}
        precondition(c.value == benchmark.scaledIterations.count)
    }

    // async onto the default global queue in a group, then one wait
    Benchmark("async global/SwiftQueues") { benchmark in
        let g = SQGroup()
        let q = SQQueue.global()
        for i in benchmark.scaledIterations { q.async(group: g) { blackHole(work(i)) } }
        g.wait()
    }
    Benchmark("async global/Dispatch") { benchmark in
        let g = DispatchGroup()
        let q = DispatchQueue.global()
        for i in benchmark.scaledIterations { q.async(group: g) { blackHole(work(i)) } }
        g.wait()
    }

    // uncontended sync onto a serial queue, returning a value
    Benchmark("sync/SwiftQueues") { benchmark in
        let q = SQQueue(label: "ordo.sync")
        var total = 0
        for i in benchmark.scaledIterations { total &+= q.sync { work(i) } }
        blackHole(total)
    }
    Benchmark("sync/Dispatch") { benchmark in
        let q = DispatchQueue(label: "ordo.sync")
        var total = 0
        for i in benchmark.scaledIterations { total &+= q.sync { work(i) } }
        blackHole(total)
    }

    // one task into a group on the global queue, then wait for it: a full round trip per operation
    Benchmark("group wait/SwiftQueues") { benchmark in
        let g = SQGroup()
        let q = SQQueue.global()
        for i in benchmark.scaledIterations {
            q.async(group: g) { blackHole(work(i)) }
            g.wait()
        }
    }
    Benchmark("group wait/Dispatch") { benchmark in
        let g = DispatchGroup()
        let q = DispatchQueue.global()
        for i in benchmark.scaledIterations {
            q.async(group: g) { blackHole(work(i)) }
            g.wait()
        }
    }

    // addOperation of a trivial closure, then waitUntilAllOperationsAreFinished
    Benchmark("addOperation/SwiftQueues") { benchmark in
        let queue = SQOperationQueue()
        for i in benchmark.scaledIterations { queue.addOperation { blackHole(work(i)) } }
        queue.waitUntilAllOperationsAreFinished()
    }
    Benchmark("addOperation/Foundation") { benchmark in
        let queue = OperationQueue()
        for i in benchmark.scaledIterations { queue.addOperation { blackHole(work(i)) } }
        queue.waitUntilAllOperationsAreFinished()
    }

    // unstructured Tasks: 1,000 started, then their values awaited in order
    Benchmark("Task/SwiftQueues executor") { benchmark in
        let executor = SQQueue.global()
        var tasks: [Task<Int, Never>] = []
        tasks.reserveCapacity(benchmark.scaledIterations.count)
        for i in benchmark.scaledIterations {
            tasks.append(Task(executorPreference: executor) { work(i) })
        }
        var sum = 0
        for t in tasks { sum += await t.value }
        precondition(sum == benchmark.scaledIterations.count / 2)
    }
    Benchmark("Task/default executor") { benchmark in
        var tasks: [Task<Int, Never>] = []
        tasks.reserveCapacity(benchmark.scaledIterations.count)
        for i in benchmark.scaledIterations {
            tasks.append(Task { work(i) })
        }
        var sum = 0
        for t in tasks { sum += await t.value }
        precondition(sum == benchmark.scaledIterations.count / 2)
    }
}
