#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SwiftQueues
import Testing

/// Runs `count` operations on `queue` that each occupy `occupancy` briefly; returns when they
/// have all finished.
func runOccupying(_ queue: SQOperationQueue, count: Int, occupancy: Occupancy) {
    var operations: [SQOperation] = []
    for _ in 0..<count {
        operations.append(
            SQBlockOperation {
                occupancy.during {
                    for _ in 0..<20 { busyWork() }
                }
            })
    }
    let returned = completes { [operations] in
        queue.addOperations(operations, waitUntilFinished: true)
    }
    #expect(returned)
}

/// Adds `count` operations that all have to be running at the same moment to finish (each
/// signals the others, then waits for all of them); returns how many met. With a limit below
/// `count`, the first ones would wait for ever: only use it with room for all of them.
func meetingOperations(_ queue: SQOperationQueue, count: Int) -> Int {
    let arrivals = SQSemaphore(value: 0)
    let met = Counter()
    let departures = (0..<count).map { _ in SQSemaphore(value: 0) }
    var operations: [SQOperation] = []
    for index in 0..<count {
        operations.append(
            SQBlockOperation {
                arrivals.signal()
                if departures[index].wait(timeout: patience()) == .success { met.add() }
            })
    }
    queue.addOperations(operations, waitUntilFinished: false)
    for _ in 0..<count {
        #expect(arrived(arrivals))
    }
    for departure in departures {
        departure.signal()
    }
    #expect(empties(queue))
    return met.value
}

/// SQOperationQueue: limits, priorities, suspension, barriers, waiting (issue 12).
@Suite struct OperationQueueTests {
    @Test func testDefaults() {
        let queue = SQOperationQueue()
        #expect(
            queue.maxConcurrentOperationCount
                == SQOperationQueue.defaultMaxConcurrentOperationCount)
        #expect(SQOperationQueue.defaultMaxConcurrentOperationCount == -1)
        #expect(!queue.isSuspended)
        #expect(queue.operationCount == 0 && queue.operations.isEmpty)
        // The object's address, as Foundation and a debugger print it (it was a seeded hash).
        let address = String(UInt(bitPattern: Unmanaged.passUnretained(queue).toOpaque()), radix: 16)
        #expect(queue.name == "SQOperationQueue 0x\(address)")
        let operation = SQBlockOperation {}
        let operationAddress = String(
            UInt(bitPattern: Unmanaged.passUnretained(operation).toOpaque()), radix: 16)
        #expect("\(operation)" == "<SQBlockOperation 0x\(operationAddress)>")
        queue.name = "work"
        #expect(queue.name == "work")
        #expect(queue.qualityOfService == .default)
        #expect(queue.underlyingQueue == nil)
        #expect(empties(queue))  // empty: returns at once
    }

    @Test(arguments: [1, 2, 3])
    func testPeakNeverExceedsTheLimit(limit: Int) {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = limit
        let occupancy = Occupancy()
        runOccupying(queue, count: 300, occupancy: occupancy)
        #expect(occupancy.peak.value <= limit)
        #expect(occupancy.peak.value >= 1)
        if limit > 1 {
            // The limit is reached, not only respected.
            #expect(meetingOperations(queue, count: limit) == limit)
        }
    }

    @Test func testWithoutLimitManyRunAtOnce() {
        let queue = SQOperationQueue()
        // Eight operations waiting for each other: the pool gives waiting workers spares.
        #expect(meetingOperations(queue, count: 8) == 8)
    }

    @Test func testRaisingTheLimitWhileRunningStartsWaitingOperations() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let blocker = RecordingOperation("blocker", holdUntil: release)
        let next = RecordingOperation("next")
        queue.addOperations([blocker, next], waitUntilFinished: false)
        #expect(arrived(blocker.started))
        queue.maxConcurrentOperationCount = 2
        #expect(arrived(next.started))  // while the blocker still runs
        #expect(blocker.isExecuting)
        release.signal()
        #expect(empties(queue))
    }

    @Test func testLoweringTheLimitWhileRunningHoldsNewStarts() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 2
        let releaseFirst = SQSemaphore(value: 0)
        let releaseSecond = SQSemaphore(value: 0)
        let first = RecordingOperation("first", holdUntil: releaseFirst)
        let second = RecordingOperation("second", holdUntil: releaseSecond)
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(arrived(first.started) && arrived(second.started))
        queue.maxConcurrentOperationCount = 1
        #expect(queue.maxConcurrentOperationCount == 1)
        let sawSecondRunning = Counter()
        let third = SQBlockOperation {
            if second.isExecuting { sawSecondRunning.add() }
        }
        queue.addOperation(third)
        releaseFirst.signal()
        #expect(finishes(first))
        // Two ran; the limit is now 1 and `second` still runs, so `third` must wait for it.
        releaseSecond.signal()
        #expect(finishes(third))
        #expect(sawSecondRunning.value == 0)
        #expect(second.isFinished)
    }

    @Test func testZeroLimitStartsNothingUntilRaised() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 0
        let operation = RecordingOperation()
        queue.addOperation(operation)
        #expect(operation.started.wait(timeout: shortly()) == .timedOut)
        queue.maxConcurrentOperationCount = 1
        #expect(finishes(operation))
        #expect(operation.runs.value == 1)
    }

    @Test func testHighestPriorityFirstFIFOAmongEquals() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let gate = RecordingOperation("gate", holdUntil: release)
        queue.addOperation(gate)
        #expect(arrived(gate.started))
        let log = Log<String>()
        let plan: [(String, SQOperation.QueuePriority)] = [
            ("low1", .low), ("normal1", .normal), ("veryHigh1", .veryHigh), ("high1", .high),
            ("normal2", .normal), ("veryLow1", .veryLow), ("high2", .high), ("low2", .low),
            ("veryHigh2", .veryHigh),
        ]
        for (tag, priority) in plan {
            let operation = RecordingOperation(tag, log: log)
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        release.signal()
        #expect(empties(queue))
        #expect(log.values == [
            "veryHigh1", "veryHigh2", "high1", "high2", "normal1", "normal2", "low1", "low2",
            "veryLow1",
        ])
    }

    @Test func testPriorityOrdersOnlyReadyOperations() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let gate = RecordingOperation("gate", holdUntil: release)
        queue.addOperation(gate)
        #expect(arrived(gate.started))
        let log = Log<String>()
        let unfinished = RecordingOperation("dependency", log: log)  // in no queue yet
        let urgent = RecordingOperation("urgent", log: log)
        urgent.queuePriority = .veryHigh
        urgent.addDependency(unfinished)
        let routine = RecordingOperation("routine", log: log)
        routine.queuePriority = .veryLow
        queue.addOperations([urgent, routine], waitUntilFinished: false)
        release.signal()
        #expect(finishes(routine))  // the ready one runs although the other is more urgent
        unfinished.start()
        #expect(finishes(urgent))
        #expect(log.values == ["routine", "dependency", "urgent"])
    }

    @Test func testChangingPriorityOfAWaitingOperationMovesIt() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let gate = RecordingOperation("gate", holdUntil: release)
        queue.addOperation(gate)
        #expect(arrived(gate.started))
        let log = Log<String>()
        let first = RecordingOperation("first", log: log)
        let second = RecordingOperation("second", log: log)
        queue.addOperations([first, second], waitUntilFinished: false)
        second.queuePriority = .high
        release.signal()
        #expect(empties(queue))
        #expect(log.values == ["second", "first"])
    }

    @Test func testSuspendedQueueStartsNothingUntilResumed() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        #expect(queue.isSuspended)
        let operations = (0..<20).map { RecordingOperation("op\($0)") }
        queue.addOperations(operations, waitUntilFinished: false)
        #expect(operations[0].started.wait(timeout: shortly()) == .timedOut)
        #expect(operations.allSatisfy { $0.runs.value == 0 })
        #expect(queue.operationCount == 20)
        queue.isSuspended = false
        #expect(empties(queue))
        #expect(operations.allSatisfy { $0.runs.value == 1 })
    }

    @Test func testSuspendingStopsFurtherStarts() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let running = RecordingOperation("running", holdUntil: release)
        let later = RecordingOperation("later")
        queue.addOperations([running, later], waitUntilFinished: false)
        #expect(arrived(running.started))
        queue.isSuspended = true
        release.signal()
        #expect(finishes(running))  // the running one finishes; the next must not start
        #expect(later.started.wait(timeout: shortly()) == .timedOut)
        queue.isSuspended = false
        #expect(finishes(later))
        #expect(later.runs.value == 1)
    }

    @Test func testSuspendingFromAnOperationHoldsBackTheNextOne() {
        // Block operations on a width-1 queue: the next one would be started by the same
        // pool thread right after the first (a hand-off); suspension must still stop it.
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let ran = Counter()
        let first = SQBlockOperation { queue.isSuspended = true }
        let second = SQBlockOperation { ran.add() }
        queue.addOperations([first, second], waitUntilFinished: false)
        queue.isSuspended = false
        #expect(finishes(first))
        _ = SQSemaphore(value: 0).wait(timeout: shortly())
        #expect(ran.value == 0 && !second.isFinished)
        queue.isSuspended = false
        #expect(finishes(second))
        #expect(ran.value == 1)
    }

    @Test func testCancelAllOperations() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let running = RecordingOperation("running", holdUntil: release)
        queue.addOperation(running)
        #expect(arrived(running.started))
        let waiting = (0..<50).map { RecordingOperation("w\($0)") }
        queue.addOperations(waiting, waitUntilFinished: false)
        queue.cancelAllOperations()
        #expect(running.isCancelled)
        release.signal()
        #expect(empties(queue))
        #expect(waiting.allSatisfy { $0.isCancelled && $0.isFinished && $0.runs.value == 0 })
        #expect(running.runs.value == 1)
        let afterwards = RecordingOperation()
        queue.addOperation(afterwards)  // later additions are not cancelled
        #expect(finishes(afterwards))
        #expect(afterwards.runs.value == 1 && !afterwards.isCancelled)
    }

    @Test func testWaitUntilAllOperationsAreFinishedIncludesConcurrentAdds() {
        // Each operation adds the next one from its pool thread before it finishes, so the
        // queue never empties until the last.
        let queue = SQOperationQueue()
        let done = Counter()
        let total = 200
        @Sendable func step(_ index: Int) {
            if index + 1 < total {
                queue.addOperation { step(index + 1) }
            }
            done.add()
        }
        queue.addOperation { step(0) }
        let others = SQGroup()
        for _ in 0..<4 {
            SQQueue.global().async(group: others) {
                for _ in 0..<100 { queue.addOperation { done.add() } }
            }
        }
        #expect(others.wait(timeout: patience()) == .success)
        #expect(empties(queue))
        #expect(done.value == total + 400)
        #expect(queue.operationCount == 0)
    }

    @Test func testWaitersOnSeveralThreads() {
        let queue = SQOperationQueue()
        let release = SQSemaphore(value: 0)
        let held = RecordingOperation("held", holdUntil: release)
        queue.addOperation(held)
        let waiters = SQGroup()
        let returned = Counter()
        for index in 0..<4 {
            SQQueue.global().async(group: waiters) {
                if index % 2 == 0 {
                    #expect(empties(queue))
                } else {
                    #expect(finishes(held))
                }
                returned.add()
            }
        }
        #expect(arrived(held.started))
        release.signal()
        #expect(waiters.wait(timeout: patience()) == .success)
        #expect(returned.value == 4)
    }

    @Test func testOperationsAndOperationCountFollowTheQueue() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let operations = (0..<5).map { RecordingOperation("o\($0)") }
        queue.addOperations(operations, waitUntilFinished: false)
        #expect(queue.operationCount == 5)
        #expect(queue.operations.map { $0 as AnyObject }.elementsEqual(
            operations.map { $0 as AnyObject }, by: ===))
        queue.isSuspended = false
        #expect(empties(queue))
        #expect(queue.operationCount == 0 && queue.operations.isEmpty)
    }

    @Test func testBarrierWaitsForEarlierAndHoldsBackLater() {
        let queue = SQOperationQueue()
        let before = Counter()
        let release = SQSemaphore(value: 0)
        let earlier = (0..<20).map { _ in
            SQBlockOperation {
                _ = release.wait(timeout: patience())
                before.add()
            }
        }
        queue.addOperations(earlier, waitUntilFinished: false)
        let barrierSaw = Counter()
        let barrierDone = Counter()
        queue.addBarrierBlock {
            barrierSaw.add(before.value)
            barrierDone.add()
        }
        let laterSawBarrier = Counter()
        let later = (0..<20).map { _ in
            SQBlockOperation { laterSawBarrier.add(barrierDone.value) }
        }
        queue.addOperations(later, waitUntilFinished: false)
        // Adds from other threads while the barrier is pending are held back too.
        let adders = SQGroup()
        for _ in 0..<2 {
            SQQueue.global().async(group: adders) {
                for _ in 0..<10 {
                    queue.addOperation { laterSawBarrier.add(barrierDone.value) }
                }
            }
        }
        #expect(adders.wait(timeout: patience()) == .success)
        for _ in 0..<20 { release.signal() }
        #expect(empties(queue))
        #expect(barrierSaw.value == 20)
        #expect(laterSawBarrier.value == 40)
    }

    @Test func testBarrierIncludesCompletionBlocksAndIgnoresCancelAll() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let completions = Counter()
        for _ in 0..<10 {
            let operation = SQBlockOperation {}
            operation.completionBlock = { completions.add() }
            queue.addOperation(operation)
        }
        let barrierSaw = Counter()
        let barrierRan = Counter()
        queue.addBarrierBlock {
            barrierSaw.add(completions.value)
            barrierRan.add()
        }
        queue.cancelAllOperations()
        queue.isSuspended = false
        #expect(empties(queue))
        #expect(barrierRan.value == 1)
        #expect(barrierSaw.value == 10)
    }

    @Test func testSuccessiveBarriers() {
        let queue = SQOperationQueue()
        let log = Log<String>()
        queue.addOperation { log.append("a") }
        queue.addBarrierBlock { log.append("B1") }
        queue.addOperation { log.append("b") }
        queue.addBarrierBlock { log.append("B2") }
        queue.addBarrierBlock { log.append("B3") }
        queue.addOperation { log.append("c") }
        #expect(empties(queue))
        #expect(log.values == ["a", "B1", "b", "B2", "B3", "c"])
        queue.addBarrierBlock { log.append("B4") }  // on an empty queue: at once
        #expect(empties(queue))
        #expect(log.values.last == "B4")
    }

    /// Many barriers among many operations, some of which finish out of order (held by a
    /// dependency on a later operation of their stretch, or, in the first stretch, on an
    /// operation started from outside the queue): each barrier starts only after every
    /// operation added before it has finished, and none added after it starts before it has
    /// returned (per-stretch counts replaced a walk over all later barriers per finish).
    @Test func testManyBarriersKeepTheirStretches() {
        let queue = SQOperationQueue()
        let finished = Counter()  // operations (not barriers) finished
        let barriersDone = Counter()
        let broken = Counter()
        let outside = SQBlockOperation {}  // in no queue: started by hand below
        var added = 0
        for stretch in 0..<400 {
            var operations: [SQOperation] = []
            for _ in 0..<9 {
                let barriersBefore = stretch
                operations.append(SQBlockOperation {
                    if barriersDone.value < barriersBefore { broken.add() }
                    finished.add()
                })
            }
            operations[4].addDependency(stretch == 0 ? outside : operations[8])
            queue.addOperations(operations, waitUntilFinished: false)
            added += operations.count
            let before = added
            queue.addBarrierBlock {
                if finished.value != before { broken.add() }
                barriersDone.add()
            }
        }
        outside.start()
        #expect(empties(queue))
        #expect(broken.value == 0)
        #expect(finished.value == added)
        #expect(barriersDone.value == 400)
    }

    @Test func testHundredThousandOperationsRunExactlyOnce() {
        let count = 100_000
        let hits = Locked([UInt8](repeating: 0, count: count))
        let queue = SQOperationQueue()
        for index in 0..<count {
            queue.addOperation { hits.withLock { $0[index] &+= 1 } }
        }
        #expect(empties(queue))
        let wrong = hits.withLock { hits in hits.filter { $0 != 1 }.count }
        #expect(wrong == 0)
    }

    @Test func testChainRunsInOrderWithAnyLimit() {
        for limit in [-1, 1, 3] {
            let queue = SQOperationQueue()
            queue.maxConcurrentOperationCount = limit
            let next = Counter()
            let broken = Counter()
            var operations: [SQOperation] = []
            for index in 0..<2_000 {
                let operation = SQBlockOperation {
                    if next.add() != index { broken.add() }
                }
                if let previous = operations.last { operation.addDependency(previous) }
                operations.append(operation)
            }
            let returned = completes { [operations] in
                queue.addOperations(operations.reversed(), waitUntilFinished: true)
            }
            #expect(returned)
            #expect(broken.value == 0 && next.value == 2_000, "limit \(limit)")
        }
    }

    @Test func testFanIn() {
        let queue = SQOperationQueue()
        let finished = Counter()
        let sawAll = Counter()
        let last = SQBlockOperation { sawAll.add(finished.value) }
        var operations: [SQOperation] = []
        for _ in 0..<5_000 {
            let operation = SQBlockOperation { finished.add() }
            last.addDependency(operation)
            operations.append(operation)
        }
        queue.addOperation(last)
        queue.addOperations(operations, waitUntilFinished: false)
        #expect(finishes(last))
        #expect(sawAll.value == 5_000)
    }

    @Test func testUnderlyingQueueRunsTheOperations() {
        let key = SQSpecificKey<Int>()
        let serial = SQQueue(label: "underlying")
        serial.setSpecific(key: key, value: 12)
        let queue = SQOperationQueue()
        queue.underlyingQueue = serial
        #expect(queue.underlyingQueue === serial)
        let seen = Log<Int?>()
        let occupancy = Occupancy()
        for _ in 0..<20 {
            queue.addOperation {
                occupancy.during {
                    seen.append(SQQueue.getSpecific(key: key))
                    busyWork()
                }
            }
        }
        #expect(empties(queue))
        #expect(seen.values.count == 20 && seen.values.allSatisfy { $0 == 12 })
        #expect(occupancy.peak.value == 1)  // a serial underlying queue: one at a time
        queue.underlyingQueue = nil  // empty again: allowed
        #expect(queue.underlyingQueue == nil)
    }

    @Test func testQualityOfServicePicksThePriority() {
        // Background work runs on nice-19 threads: the niceness shows where an operation ran.
        @Sendable func niceness() -> Int32 {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }
        let seen = Locked<[String: Int32]>([:])
        let queue = SQOperationQueue()
        let background = SQBlockOperation { seen.withLock { $0["background"] = niceness() } }
        background.qualityOfService = .background
        let plain = SQBlockOperation { seen.withLock { $0["default"] = niceness() } }
        let returned = completes {
            queue.addOperations([background, plain], waitUntilFinished: true)
        }
        if !returned {
            // Seen twice in about 40 TSan runs of the operation suites (the background
            // operation never ran); the pool's state, for the next time.
            print(
                "testQualityOfServicePicksThePriority: background ready \(background.isReady) "
                    + "executing \(background.isExecuting) finished \(background.isFinished); "
                    + "plain finished \(plain.isFinished); queue count \(queue.operationCount)")
            SQRuntime.dump()
        }
        #expect(returned)
        let quiet = SQOperationQueue()
        quiet.qualityOfService = .background
        let inherited = SQBlockOperation { seen.withLock { $0["inherited"] = niceness() } }
        let own = SQBlockOperation { seen.withLock { $0["own"] = niceness() } }
        own.qualityOfService = .userInitiated
        let returnedToo = completes {
            quiet.addOperations([inherited, own], waitUntilFinished: true)
        }
        #expect(returnedToo)
        let values = seen.withLock { $0 }
        #expect(values.filter { $0.key != "own" } == ["background": 19, "default": 0, "inherited": 19])
        // High work runs on a normal worker (nice 0), or, while both are busy (a loaded
        // machine), on the express thread, 2 below where the process may lower it.
        #expect(values["own"] == 0 || values["own"] == -2)
    }

    @Test func testCurrentQueue() {
        let queue = SQOperationQueue()
        #expect(SQOperationQueue.current == nil)
        let inMain = Log<Bool>()
        let inCompletion = Log<Bool>()
        let operation = SQBlockOperation { inMain.append(SQOperationQueue.current === queue) }
        operation.completionBlock = { inCompletion.append(SQOperationQueue.current === queue) }
        let returned = completes {
            queue.addOperations([operation], waitUntilFinished: true)
        }
        #expect(returned)
        #expect(inMain.values == [true])
        #expect(inCompletion.values == [true])
    }

    /// An operation that finishes itself on its start path and records what
    /// `SQOperationQueue.current` says before, during (its completion block) and after.
    final class SelfFinishingOperation: SQOperation, @unchecked Sendable {
        let queue: SQOperationQueue
        let seen = Log<String>()

        init(queue: SQOperationQueue) {
            self.queue = queue
            super.init()
            completionBlock = { [seen] in
                seen.append("completion \(SQOperationQueue.current === queue)")
            }
        }

        override func main(finish: Finisher) {
            seen.append("before \(SQOperationQueue.current === queue)")
            finish()
            // The queue has let the operation go: the start path no longer names it.
            seen.append("after \(SQOperationQueue.current == nil)")
            returned.signal()
        }

        /// Signalled when `main` has returned: the queue's waiters wake at `finish()`, before
        /// the "after" entry.
        let returned = SQSemaphore(value: 0)
    }

    @Test func testCurrentQueueWhileTheOperationFinishes() {
        let queue = SQOperationQueue()
        // The operation's own observers run on the finishing thread (nobody else delivers).
        let observed = Log<String>()
        let operation = SQBlockOperation {}
        let observation = operation.observeStateChanges { change in
            if change == .executing || change == .finished {
                observed.append("\(change) \(SQOperationQueue.current === queue)")
            }
        }
        let selfFinishing = SelfFinishingOperation(queue: queue)
        let returned = completes {
            queue.addOperations([operation, selfFinishing], waitUntilFinished: true)
        }
        #expect(returned)
        #expect(observed.values == ["executing true", "finished true"])
        #expect(arrived(selfFinishing.returned))
        #expect(selfFinishing.seen.values == ["before true", "completion true", "after true"])
        observation.invalidate()
    }

    /// An asynchronous operation finishes on a thread of its own choosing, not on the queue's
    /// start path: its completion block and its `.finished` observers still name its queue
    /// (both were nil), for both ways of writing one.
    @Test func testCurrentQueueWhileAnAsynchronousOperationFinishes() {
        let queue = SQOperationQueue()
        let seen = Log<String>()
        let release = SQSemaphore(value: 0)
        release.signal()  // finishes at once (a semaphore must end at its initial value)
        let finisher = FinisherOperation(release: release)
        finisher.completionBlock = {
            seen.append("finisher completion \(SQOperationQueue.current === queue)")
        }
        let observation = finisher.observeStateChanges { change in
            if change == .finished {
                seen.append("finisher observer \(SQOperationQueue.current === queue)")
            }
        }
        let guide = GuideStyleOperation { $0.completeOperation() }
        guide.completionBlock = {
            seen.append("guide completion \(SQOperationQueue.current === queue)")
        }
        #expect(completes { queue.addOperations([finisher, guide], waitUntilFinished: true) })
        #expect(
            seen.values.sorted() == [
                "finisher completion true", "finisher observer true", "guide completion true",
            ])
        // Outside the finish, the thread names no queue again.
        let after = Log<Bool>()
        let checked = SQSemaphore(value: 0)
        let probe = GuideStyleOperation { operation in
            operation.completeOperation()
            after.append(SQOperationQueue.current == nil)
            checked.signal()
        }
        queue.addOperation(probe)
        #expect(arrived(checked))
        #expect(after.values == [true])
        observation.invalidate()
    }

    @Test func testMainQueue() {
        let main = SQOperationQueue.main
        #expect(main === SQOperationQueue.main)
        #expect(main.underlyingQueue === SQQueue.main)
        #expect(main.maxConcurrentOperationCount == 1)
        #expect(main.name == "SQOperationQueue.main")
        // As Foundation: one at a time whatever is set (ours took 4), at the main thread's
        // quality of service (ours said .default).
        main.maxConcurrentOperationCount = 4
        #expect(main.maxConcurrentOperationCount == 1)
        #expect(main.qualityOfService == .userInteractive)
    }

    @Test func testProgressCountsFinishedOperations() {
        let queue = SQOperationQueue()
        #expect(queue.progress.totalUnitCount == 0 && queue.progress.fractionCompleted == 0)
        queue.progress.totalUnitCount = 10
        for _ in 0..<10 { queue.addOperation {} }
        queue.addBarrierBlock {}  // not counted
        #expect(empties(queue))
        #expect(queue.progress.completedUnitCount == 10)
        #expect(queue.progress.fractionCompleted == 1 && queue.progress.isFinished)
    }

    /// As Foundation documents, an operation whose `start()` override does not call
    /// `super.start()` does not count in the queue's progress (ours counted it); one that calls
    /// it later, from a queue of its own, does, as do cancelled operations the default start
    /// finishes.
    @Test func testProgressCountsOnlyOperationsOfTheDefaultStart() {
        let queue = SQOperationQueue()
        queue.progress.totalUnitCount = 4
        let guide = GuideStyleOperation { $0.completeOperation() }
        let hopping = HoppingOperation()
        let cancelled = SQBlockOperation {}
        cancelled.cancel()
        queue.addOperation(guide)
        queue.addOperation(hopping)
        queue.addOperation(cancelled)
        queue.addOperation {}
        #expect(empties(queue))
        #expect(guide.ran.value == 1 && hopping.ranOnHop.value == 1)
        #expect(queue.progress.completedUnitCount == 3)
    }

    /// Queues dropped at once, each with two operations that finish on two pool threads and
    /// a progress total: the finish that empties the queue frees it, while the other finish
    /// may still be on its way out. That one must not touch the queue any more (it counted its
    /// progress after the queue lock, on freed memory: a TSan run of the suite caught it).
    @Test func testQueuesDroppedWhileTheirOperationsFinish() {
        let ran = Counter()
        // Each queue enters on creation and leaves in its deinit: the wait is for every free.
        let freed = SQGroup()
        final class Watched: SQOperationQueue, @unchecked Sendable {
            let freed: SQGroup
            init(_ freed: SQGroup) {
                self.freed = freed
                freed.enter()
            }
            deinit { freed.leave() }
        }
        let rounds = 5_000
        for _ in 0..<rounds {
            let queue = Watched(freed)
            queue.progress.totalUnitCount = 2
            queue.addOperation { ran.add() }
            queue.addOperation { ran.add() }
        }
        #expect(freed.wait(timeout: patience()) == .success)
        #expect(ran.value == 2 * rounds)
    }

    @Test func testQueueStaysAliveWhileItHoldsOperations() {
        let done = SQSemaphore(value: 0)
        let freed = SQSemaphore(value: 0)
        let release = SQSemaphore(value: 0)
        do {
            final class Watched: SQOperationQueue, @unchecked Sendable {
                let freed: SQSemaphore
                init(_ freed: SQSemaphore) { self.freed = freed }
                deinit { freed.signal() }
            }
            let queue = Watched(freed)
            queue.addOperation(signallingOperation(done) { _ = release.wait(timeout: patience()) })
        }
        // The caller dropped the queue; it must still run its operation, then go away.
        #expect(freed.wait(timeout: shortly()) == .timedOut)
        release.signal()
        #expect(arrived(done))
        #expect(arrived(freed))
    }
}
