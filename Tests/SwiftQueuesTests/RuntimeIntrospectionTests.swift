import SwiftQueues
import Testing

/// SQRuntime: the counters grow by at least the tasks run; the snapshot lists the global and
/// main queues, created queues with their kinds, widths, suspend counts and targets, the
/// workers, and sources; dump() writes without crashing.
@Suite struct RuntimeIntrospectionTests {
    @Test func countersGrowByTheTasksRun() {
        let before = SQRuntime.counters
        let group = SQGroup()
        let queue = SQSerialQueue(label: "runtime.counters")
        for _ in 0..<300 {
            queue.async(group: group) {}
            SQQueue.global().async(group: group) {}
        }
        group.wait()
        queue.sync {}
        let after = SQRuntime.counters
        #expect(after.tasksRun - before.tasksRun >= 600)
        #expect(after.steals >= before.steals)
        #expect(after.parks >= before.parks)
        // the pool's workers ran the tasks: at least one runtime thread exists
        #expect(after.threadsStarted >= 1)
        #expect(after.threadsStarted >= before.threadsStarted)
        #expect(after.overcommitWakeups >= before.overcommitWakeups)
    }

    /// Each operation counts as a task, also where an operation queue of limited width starts
    /// many in one pool work item (one after the other): 10,000 operations added 15-66 to
    /// `tasksRun` at widths 8, 4 and 1, so a dashboard's task rate read 100-1000 times low.
    @Test(arguments: [SQOperationQueue.defaultMaxConcurrentOperationCount, 4, 1])
    func operationsCountAsTasks(width: Int) {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = width
        let before = SQRuntime.counters.tasksRun
        for _ in 0..<2_000 { queue.addOperation {} }
        queue.waitUntilAllOperationsAreFinished()
        let after = SQRuntime.counters.tasksRun
        #expect(after - before >= 2_000)
    }

    @Test func poolFiguresAgreeWithTheSnapshot() {
        SQQueue.global().sync {}  // the pool runs
        let pool = SQRuntime.pool
        let snapshot = SQRuntime.snapshot()
        #expect(pool.workers >= 1)
        #expect(pool.workers == snapshot.workers)
        #expect(pool.threadLimit == snapshot.threadLimit)
        #expect(pool.threadLimit >= 2 * pool.workers + 1)
        #expect(pool.threadsPeak >= pool.threads)
        #expect(pool.threads >= 1)
    }

    @Test func snapshotListsQueuesWorkersAndSources() throws {
        let serial = SQSerialQueue(label: "runtime.snapshot.serial")
        let concurrent = SQConcurrentQueue(label: "runtime.snapshot.concurrent")
        let child = SQSerialQueue(label: "runtime.snapshot.child", target: serial)
        let suspended = SQSerialQueue(label: "runtime.snapshot.suspended")
        suspended.suspend()
        for _ in 0..<3 { suspended.async {} }
        let timer = SQSource.makeTimerSource(queue: serial)

        let s = SQRuntime.snapshot()
        #expect(
            s.queues.prefix(5).map(\.label) == [
                "cq.global.high", "cq.global.default", "cq.global.low", "cq.global.background",
                "cq.main-thread",
            ])
        #expect(s.queues[0].kind == .global)
        #expect(s.queues[0].width == nil)
        #expect(s.queues[4].kind == .main)

        let byLabel = Dictionary(s.queues.map { ($0.label, $0) }, uniquingKeysWith: { a, _ in a })
        let serialInfo = try #require(byLabel["runtime.snapshot.serial"])
        #expect(serialInfo.kind == .serial)
        #expect(serialInfo.width == 1)
        #expect(serialInfo.suspendCount == 0)
        #expect(serialInfo.targetLabel == "cq.global.default")
        let concurrentInfo = try #require(byLabel["runtime.snapshot.concurrent"])
        #expect(concurrentInfo.kind == .concurrent)
        #expect(concurrentInfo.width == nil)
        #expect(byLabel["runtime.snapshot.child"]?.targetLabel == "runtime.snapshot.serial")
        #expect(byLabel["runtime.snapshot.suspended"]?.suspendCount == 1)
        #expect(byLabel["runtime.snapshot.suspended"]?.queuedItems == 3)
        #expect(byLabel["runtime.snapshot.suspended"]?.hasQueuedItems == true)
        #expect(serialInfo.queuedItems == 0)

        #expect(s.workers >= 1)
        #expect(s.workerStates.count >= s.workers)
        #expect(s.threads >= 1)
        // The C snapshot's fields, all of them: unparks follow parks (a worker is woken at most
        // once per park, plus the one that is parked now), blocked-in-task workers are workers.
        #expect(s.workerStates.allSatisfy { $0.unparks <= $0.parks })
        #expect(s.blockedInTasks >= 0 && s.blockedInTasks <= s.workerStates.count)

        let timerInfo = s.sources.first {
            $0.type == "timer" && $0.targetLabel == "runtime.snapshot.serial"
        }
        #expect(timerInfo != nil)
        #expect(timerInfo?.isActivated == false)

        suspended.resume()
        timer.cancel()
        timer.activate()
        withExtendedLifetime((concurrent, child)) {}
        SQRuntime.dump()
    }
}
