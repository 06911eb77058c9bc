// Operation workloads (issue 12): SQOperationQueue against Foundation's OperationQueue, in
// the same process. The second column of these rows is Foundation, not Dispatch.
//
// Goals (absolute, from the issue): op_add ≤ 0.4 µs/op; op_chain_* ≤ 1 µs/op and linear
// (20k and 100k per-op alike); op_block_2x05 ≤ 0.55 s.

import Dispatch
import Foundation
import SwiftQueues
import Synchronization

/// Foundation's OperationQueue rescans waiting operations on every state change: a chain of n
/// dependent operations costs it about 0.09 µs × n per operation here (20k: ~40 s a run). Its
/// side of the chain rows therefore runs a chain of this length and reports the time per
/// operation of that shorter chain (which flatters Foundation); its allocation column is per
/// operation of the row's full length (so understated by the same factor).
let foundationChainLength = 2_000

final class OpTally: Sendable {
    private let count = Atomic<Int>(0)
    private let outOfOrder = Atomic<Bool>(false)
    /// One atomic add (and, out of order, one store): the trivial closure of the `op_*` rows.
    /// `index` is the number of hits expected before this one; in order when every hit finds
    /// exactly that many (checked only where operations run one at a time).
    func hit(_ index: Int) {
        if count.wrappingAdd(1, ordering: .relaxed).oldValue != index {
            outOfOrder.store(true, ordering: .relaxed)
        }
    }
    var value: Int { count.load(ordering: .acquiring) }
    var ordered: Bool { !outOfOrder.load(ordering: .acquiring) }
}

func operationAddWorkload(serial: Bool) -> Workload {
    Workload(
        name: serial ? "op_add_serial" : "op_add",
        title: "addOperation of trivial closures"
            + (serial ? ", maxConcurrentOperationCount 1 (FIFO checked)" : "")
            + ", then waitUntilAllOperationsAreFinished (vs Foundation)",
        unit: "ns/op", ops: quick ? 20_000 : 200_000, goal: nil,
        ours: { n in
            let queue = SQOperationQueue()
            if serial { queue.maxConcurrentOperationCount = 1 }
            let tally = OpTally()
            let t0 = nowNs()
            for i in 0..<n { queue.addOperation { tally.hit(i) } }
            queue.waitUntilAllOperationsAreFinished()
            let t = nowNs() - t0
            check(tally.value == n, "SQOperationQueue ran \(tally.value) of \(n)")
            if serial { check(tally.ordered, "SQOperationQueue width 1 out of order") }
            return t
        },
        dispatch: { n in
            let queue = OperationQueue()
            if serial { queue.maxConcurrentOperationCount = 1 }
            let tally = OpTally()
            let t0 = nowNs()
            for i in 0..<n { queue.addOperation { tally.hit(i) } }
            queue.waitUntilAllOperationsAreFinished()
            let t = nowNs() - t0
            check(tally.value == n, "OperationQueue ran \(tally.value) of \(n)")
            if serial { check(tally.ordered, "OperationQueue width 1 out of order") }
            return t
        })
}

/// The floor under `op_add`: the same closures (capturing the same tally) given straight to
/// the default global queue in a group, with no operation objects. What any operation queue
/// built on a dispatch queue pays per `addOperation` at least: the closure's allocation on the
/// adding thread, its free on a pool thread, the tally's reference count, the hand-off. The
/// second column is Dispatch here.
func operationAddFloorWorkload() -> Workload {
    Workload(
        name: "op_add_floor",
        title: "the floor under op_add: its closures onto the default global queue in a group, "
            + "no operation objects (vs Dispatch)",
        unit: "ns/op", ops: quick ? 20_000 : 200_000, goal: nil,
        ours: { n in
            let queue = SQQueue.global()
            let group = SQGroup()
            let tally = OpTally()
            let t0 = nowNs()
            for i in 0..<n { queue.async(group: group) { tally.hit(i) } }
            group.wait()
            let t = nowNs() - t0
            check(tally.value == n, "SQQueue ran \(tally.value) of \(n)")
            return t
        },
        dispatch: { n in
            let queue = DispatchQueue.global()
            let group = DispatchGroup()
            let tally = OpTally()
            let t0 = nowNs()
            for i in 0..<n { queue.async(group: group) { tally.hit(i) } }
            group.wait()
            let t = nowNs() - t0
            check(tally.value == n, "DispatchQueue ran \(tally.value) of \(n)")
            return t
        })
}

/// What `op_drain` asks of a queue: the member names both sides share.
protocol DrainableOperationQueue: AnyObject {
    var isSuspended: Bool { get set }
    func addOperation(_ block: @escaping @Sendable () -> Void)
    func waitUntilAllOperationsAreFinished()
}

extension SQOperationQueue: DrainableOperationQueue {}
extension OperationQueue: DrainableOperationQueue {}

/// Adds `n` counting closures to `queue` while it is suspended; returns the time from
/// resuming it to the end of its wait.
func timeDrain(_ queue: some DrainableOperationQueue, _ n: Int) -> UInt64 {
    queue.isSuspended = true
    let tally = OpTally()
    for i in 0..<n { queue.addOperation { tally.hit(i) } }
    let t0 = nowNs()
    queue.isSuspended = false
    queue.waitUntilAllOperationsAreFinished()
    let t = nowNs() - t0
    check(tally.value == n, "\(type(of: queue)) drained \(tally.value) of \(n)")
    return t
}

func operationDrainWorkload() -> Workload {
    Workload(
        name: "op_drain",
        title: "a burst of trivial closures added to a suspended queue, timed from isSuspended = "
            + "false to waitUntilAllOperationsAreFinished (vs Foundation)",
        unit: "ns/op", ops: quick ? 20_000 : 200_000, goal: nil,
        ours: { n in timeDrain(SQOperationQueue(), n) },
        dispatch: { n in timeDrain(OperationQueue(), n) })
}

func operationChainWorkload(length: Int) -> Workload {
    Workload(
        name: "op_chain_\(length / 1000)k",
        title: "a chain of dependent block operations, built, added, waited for "
            + "(Foundation side: a \(foundationChainLength)-op chain, see Operations.swift)",
        unit: "ns/op", ops: quick ? length / 10 : length, goal: nil,
        ours: { n in
            let tally = OpTally()
            let t0 = nowNs()
            var operations: [SQOperation] = []
            operations.reserveCapacity(n)
            for i in 0..<n {
                let operation = SQBlockOperation { tally.hit(i) }
                if i > 0 { operation.addDependency(operations[i - 1]) }
                operations.append(operation)
            }
            SQOperationQueue().addOperations(operations, waitUntilFinished: true)
            let t = nowNs() - t0
            check(tally.value == n && tally.ordered, "SQOperationQueue chain out of order")
            return t
        },
        dispatch: { n in
            let m = min(n, foundationChainLength)
            let tally = OpTally()
            let t0 = nowNs()
            var operations: [Operation] = []
            operations.reserveCapacity(m)
            for i in 0..<m {
                let operation = BlockOperation { tally.hit(i) }
                if i > 0 { operation.addDependency(operations[i - 1]) }
                operations.append(operation)
            }
            OperationQueue().addOperations(operations, waitUntilFinished: true)
            let t = nowNs() - t0
            check(tally.value == m && tally.ordered, "OperationQueue chain out of order")
            // Reported per operation of the shorter chain.
            return t * UInt64(n) / UInt64(m)
        })
}

func operationFanInWorkload() -> Workload {
    Workload(
        name: "op_fan_in_20k",
        title: "20k block operations and one that depends on all of them (vs Foundation)",
        unit: "ns/op", ops: quick ? 2_000 : 20_000, goal: nil,
        ours: { n in
            let tally = OpTally()
            let t0 = nowNs()
            let last = SQBlockOperation { check(tally.value == n, "SQ fan-in ran early") }
            var operations: [SQOperation] = []
            operations.reserveCapacity(n + 1)
            for _ in 0..<n {
                let operation = SQBlockOperation { tally.hit(-1) }
                last.addDependency(operation)
                operations.append(operation)
            }
            operations.append(last)
            SQOperationQueue().addOperations(operations, waitUntilFinished: true)
            return nowNs() - t0
        },
        dispatch: { n in
            let tally = OpTally()
            let t0 = nowNs()
            let last = BlockOperation { check(tally.value == n, "Foundation fan-in ran early") }
            var operations: [Operation] = []
            operations.reserveCapacity(n + 1)
            for _ in 0..<n {
                let operation = BlockOperation { tally.hit(-1) }
                last.addDependency(operation)
                operations.append(operation)
            }
            operations.append(last)
            OperationQueue().addOperations(operations, waitUntilFinished: true)
            return nowNs() - t0
        })
}

func operationBlocksWorkload() -> Workload {
    Workload(
        name: "op_block_2x05",
        title: "one block operation with two 0.5 s blocks (sleeping), wall time (vs Foundation)",
        unit: "ns", ops: 1, goal: nil,
        ours: { _ in
            let operation = SQBlockOperation { usleep(500_000) }
            operation.addExecutionBlock { usleep(500_000) }
            let t0 = nowNs()
            SQOperationQueue().addOperations([operation], waitUntilFinished: true)
            return nowNs() - t0
        },
        dispatch: { _ in
            let operation = BlockOperation { usleep(500_000) }
            operation.addExecutionBlock { usleep(500_000) }
            let t0 = nowNs()
            OperationQueue().addOperations([operation], waitUntilFinished: true)
            return nowNs() - t0
        })
}

func operationWorkloads() -> [Workload] {
    [
        operationAddWorkload(serial: false),
        operationAddWorkload(serial: true),
        operationDrainWorkload(),
        operationChainWorkload(length: 20_000),
        operationChainWorkload(length: 100_000),
        operationFanInWorkload(),
        operationBlocksWorkload(),
    ].map { workload in
        var named = workload
        named.other = "Foundation"  // the second column, in the detail lines
        return named
    }
}
