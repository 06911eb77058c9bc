import SwiftQueues
import Synchronization
import Testing

/// Async bridges: `queue.run`, async waits on groups, semaphores and work items, and their
/// cancellation.
@Suite struct ConcurrencyBridgeTests {
    // MARK: - run

    @Test func testRunReturnsTheValue() async throws {
        let queue = SQSerialQueue(label: "run-value")
        let value = try await queue.run { () -> Int in
            sqPrecondition(.onQueue(queue))
            return 42
        }
        #expect(value == 42)
    }

    @Test func testRunRethrowsTheError() async {
        let queue = SQConcurrentQueue(label: "run-error")
        await #expect(throws: TestError(code: 7)) {
            try await queue.run { () -> Int in throw TestError(code: 7) }
        }
    }

    @Test func testRunKeepsFIFOOrderOnASerialQueue() async throws {
        let queue = SQSerialQueue(label: "run-fifo")
        let log = Log<Int>()
        queue.async { log.append(1) }
        try await queue.run { log.append(2) }
        queue.async { log.append(3) }
        try await queue.run { log.append(4) }
        #expect(log.values == [1, 2, 3, 4])
    }

    @Test func testRunAsBarrier() async throws {
        let queue = SQConcurrentQueue(label: "run-barrier")
        let inside = Occupancy()
        let alone = Counter()
        let group = SQGroup()
        for _ in 0..<16 {
            queue.async(group: group) { inside.during { busyWork() } }
        }
        try await queue.run(flags: .barrier) {
            // everything submitted before has finished, and nothing else runs
            if inside.peak.value >= 1 && group.wait(timeout: SQTime.now()) == .success {
                alone.add()
            }
        }
        #expect(alone.value == 1)
    }

    @Test func testRunCancelledBeforeStartNeverRuns() async {
        let queue = SQSerialQueue(label: "run-cancel-before")
        let gate = SQSemaphore(value: 0)
        let ran = Counter()
        queue.async { _ = gate.wait(timeout: patience()) }  // keeps the queue busy
        let task = Task {
            try await queue.run { ran.add() }
        }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        gate.signal()
        queue.sync {}  // everything submitted before has run (or been skipped)
        #expect(ran.value == 0)
    }

    @Test func testRunAlreadyStartedFinishes() async throws {
        let queue = SQSerialQueue(label: "run-cancel-after")
        let started = SQSemaphore(value: 0)
        let proceed = SQSemaphore(value: 0)
        let task = Task {
            try await queue.run { () -> Int in
                started.signal()
                _ = proceed.wait(timeout: patience())
                return 5
            }
        }
        try await started.waitForSignal()
        task.cancel()
        proceed.signal()
        #expect(try await task.value == 5)
    }

    // MARK: - groups

    @Test func testGroupWaitUntilEmpty() async throws {
        let group = SQGroup()
        try await group.waitUntilEmpty()  // empty now: returns at once
        let done = Counter()
        let queue = SQConcurrentQueue(label: "group-async")
        for _ in 0..<100 {
            queue.async(group: group) {
                busyWork()
                done.add()
            }
        }
        try await group.waitUntilEmpty()
        #expect(done.value == 100)
    }

    @Test func testGroupWaitIsCancellable() async {
        let group = SQGroup()
        group.enter()
        let task = Task { try await group.waitUntilEmpty() }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        group.leave()
        #expect(group.wait(timeout: patience()) == .success)
    }

    // MARK: - work items

    @Test func testWorkItemWaitUntilFinished() async throws {
        let ran = Counter()
        let item = SQWorkItem { ran.add() }
        let gate = SQSemaphore(value: 0)
        let queue = SQSerialQueue(label: "item-async")
        queue.async { _ = gate.wait(timeout: patience()) }
        queue.async(execute: item)
        let waiter = Task { try await item.waitUntilFinished() }
        gate.signal()
        try await waiter.value
        #expect(ran.value == 1)
        try await item.waitUntilFinished()  // finished: returns at once
    }

    @Test func testWorkItemWaitIsCancellable() async {
        let item = SQWorkItem {}
        let task = Task { try await item.waitUntilFinished() }  // never submitted
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    // MARK: - semaphores

    @Test func testSemaphoreWaitForSignal() async throws {
        let semaphore = SQSemaphore(value: 1)
        try await semaphore.waitForSignal()  // available: takes it at once
        let waiter = Task { try await semaphore.waitForSignal() }
        semaphore.signal()
        try await waiter.value
        #expect(semaphore.wait(timeout: SQTime.now()) == .timedOut)
        semaphore.signal()  // back to its initial value before it is released
    }

    @Test func testSemaphoreWaitCancelledTakesNothing() async {
        let semaphore = SQSemaphore(value: 0)
        let task = Task { try await semaphore.waitForSignal() }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        semaphore.signal()
        // The signal's resource is still there for a thread.
        #expect(semaphore.wait(timeout: patience()) == .success)
    }

    @Test func testSemaphoreLimitsConcurrentTasks() async {
        // Many tasks, few resources: never more than `limit` inside, nobody lost (a lost
        // hand-off would leave a task waiting, and the group would never finish).
        let limit = 3
        let semaphore = SQSemaphore(value: limit)
        let inside = Occupancy()
        let total = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    for _ in 0..<300 {
                        try? await semaphore.waitForSignal()
                        inside.during {
                            busyWork()
                            total.add()
                        }
                        semaphore.signal()
                    }
                }
            }
        }
        #expect(total.value == 16 * 300)
        #expect(inside.peak.value <= limit)
        for _ in 0..<limit {
            #expect(semaphore.wait(timeout: patience()) == .success)
        }
        #expect(semaphore.wait(timeout: SQTime.now()) == .timedOut)
        for _ in 0..<limit {
            semaphore.signal()
        }
    }

    @Test func testSemaphoreMixesThreadsAndTasks() async {
        // Threads blocked in wait() and tasks in waitForSignal() share the resources.
        let semaphore = SQSemaphore(value: 1)
        let inside = Occupancy()
        let queue = SQConcurrentQueue(label: "mixed-waiters")
        let threads = SQGroup()
        for _ in 0..<4 {
            queue.async(group: threads) {
                for _ in 0..<200 {
                    semaphore.wait()
                    inside.during { busyWork() }
                    semaphore.signal()
                }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<200 {
                        try? await semaphore.waitForSignal()
                        inside.during { busyWork() }
                        semaphore.signal()
                    }
                }
            }
        }
        #expect(threads.wait(timeout: patience()) == .success)
        #expect(inside.peak.value == 1)
    }
}
