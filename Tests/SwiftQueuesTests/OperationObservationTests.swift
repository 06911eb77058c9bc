import Synchronization
import SwiftQueues
import Testing

/// A queue change reduced to something comparable.
func describe(_ change: SQOperationQueue.StateChange, names: [ObjectIdentifier: String]) -> String {
    switch change {
    case .added(let operation): return "added \(names[ObjectIdentifier(operation)] ?? "?")"
    case .started(let operation): return "started \(names[ObjectIdentifier(operation)] ?? "?")"
    case .finished(let operation): return "finished \(names[ObjectIdentifier(operation)] ?? "?")"
    case .suspensionChanged(let suspended): return "suspended \(suspended)"
    case .maxConcurrentOperationCountChanged(let count): return "max \(count)"
    }
}

/// Observation without KVO: closures, AsyncStream, await (issue 12).
@Suite struct OperationObservationTests {
    @Test func testClosureSeesEveryTransitionInOrder() {
        let changes = Log<SQOperation.StateChange>()
        let finished = SQSemaphore(value: 0)
        let dependency = RecordingOperation("dependency")
        let operation = RecordingOperation("observed")
        let observation = operation.observeStateChanges { change in
            changes.append(change)
            if change == .finished { finished.signal() }
        }
        operation.addDependency(dependency)
        SQOperationQueue().addOperation(operation)
        dependency.start()
        #expect(arrived(finished))
        #expect(changes.values == [.notReady, .ready, .executing, .finished])
        observation.invalidate()
    }

    @Test func testCancellationTransitions() {
        let changes = Log<SQOperation.StateChange>()
        let dependency = RecordingOperation()
        let operation = RecordingOperation()
        operation.addDependency(dependency)
        let observation = operation.observeStateChanges { changes.append($0) }
        operation.cancel()
        operation.cancel()
        operation.start()
        #expect(changes.values == [.cancelled, .ready, .finished])
        _ = observation
    }

    @Test func testInvalidatedObservationHearsNothing() {
        let changes = Log<SQOperation.StateChange>()
        let operation = RecordingOperation()
        var observation: SQOperationObservation? = operation.observeStateChanges {
            changes.append($0)
        }
        #expect(observation != nil)
        observation = nil  // dropping it ends the observation
        operation.start()
        #expect(changes.values.isEmpty)
    }

    @Test func testOrderHoldsUnderConcurrentTransitions() {
        // Many operations finished by racing threads: each observer's sequence stays ordered.
        let queue = SQOperationQueue()
        var logs: [Log<SQOperation.StateChange>] = []
        var observations: [SQOperationObservation] = []
        var operations: [SQOperation] = []
        let dependency = SQBlockOperation {}
        for _ in 0..<200 {
            let operation = SQBlockOperation {}
            let log = Log<SQOperation.StateChange>()
            observations.append(operation.observeStateChanges { log.append($0) })
            operation.addDependency(dependency)
            logs.append(log)
            operations.append(operation)
        }
        queue.addOperations(operations, waitUntilFinished: false)
        for index in stride(from: 0, to: operations.count, by: 3) {
            operations[index].cancel()
        }
        queue.addOperation(dependency)
        #expect(empties(queue))
        for (index, log) in logs.enumerated() {
            let expected: [SQOperation.StateChange] =
                index % 3 == 0
                ? [.notReady, .cancelled, .ready, .finished]
                : [.notReady, .ready, .executing, .finished]
            #expect(log.values == expected, "operation \(index)")
        }
        _ = observations
    }

    @Test func testAsyncSequenceDeliversEveryChangeAndEnds() async {
        let dependency = RecordingOperation()
        let operation = RecordingOperation()
        let stream = operation.stateChanges
        operation.addDependency(dependency)
        SQOperationQueue().addOperations([dependency, operation], waitUntilFinished: false)
        let seen = Log<SQOperation.StateChange>()
        #expect(await completesAsync {
            for await change in stream {
                seen.append(change)
            }
        })
        #expect(seen.values == [.notReady, .ready, .executing, .finished])
    }

    @Test func testAsyncSequenceOfAFinishedOperation() async {
        let operation = RecordingOperation()
        operation.start()
        let seen = Log<SQOperation.StateChange>()
        #expect(await completesAsync {
            for await change in operation.stateChanges {
                seen.append(change)
            }
        })
        #expect(seen.values == [.finished])
    }

    @Test func testAwaitUntilFinished() async {
        let queue = SQOperationQueue()
        let checked = Counter()
        for _ in 0..<20 {
            let completions = Counter()
            let operation = SQBlockOperation { busyWork() }
            operation.completionBlock = { completions.add() }
            queue.addOperation(operation)
            #expect(await completesAsync {
                await operation.untilFinished
                // After the completion block.
                if operation.isFinished && completions.value == 1 { checked.add() }
            })
        }
        #expect(checked.value == 20)
        for _ in 0..<50 { queue.addOperation { busyWork() } }
        #expect(await completesAsync { await queue.untilAllOperationsAreFinished })
        #expect(queue.operationCount == 0)
    }

    @Test func testQueueChangesInOrder() {
        let queue = SQOperationQueue()
        let changes = Log<String>()
        let allFinished = SQSemaphore(value: 0)
        let finishedCount = Counter()
        let operations = (0..<3).map { RecordingOperation("o\($0)") }
        var names: [ObjectIdentifier: String] = [:]
        for operation in operations { names[ObjectIdentifier(operation)] = operation.tag }
        let frozen = names
        let observation = queue.observeStateChanges { change in
            changes.append(describe(change, names: frozen))
            if case .finished = change, finishedCount.add() == 2 { allFinished.signal() }
        }
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        queue.addOperations(operations, waitUntilFinished: false)
        queue.isSuspended = false
        #expect(arrived(allFinished))
        #expect(changes.values == [
            "max 1", "suspended true", "added o0", "added o1", "added o2", "suspended false",
            "started o0", "finished o0", "started o1", "finished o1", "started o2", "finished o2",
        ])
        _ = observation
    }

    @Test func testQueueStreamEveryOperationAddedStartedFinished() async {
        let queue = SQOperationQueue()
        let stream = queue.stateChanges
        let count = 100
        for _ in 0..<count { queue.addOperation {} }
        let wrongOrder = Counter()
        let states = Locked<[ObjectIdentifier: Int]>([:])
        #expect(await completesAsync {
            var finished = 0
            for await change in stream {
                switch change {
                case .added(let operation):
                    states.withLock {
                        if $0[ObjectIdentifier(operation)] != nil { wrongOrder.add() }
                        $0[ObjectIdentifier(operation)] = 1
                    }
                case .started(let operation):
                    states.withLock {
                        if $0[ObjectIdentifier(operation)] != 1 { wrongOrder.add() }
                        $0[ObjectIdentifier(operation)] = 2
                    }
                case .finished(let operation):
                    states.withLock {
                        if $0[ObjectIdentifier(operation)] != 2 { wrongOrder.add() }
                        $0[ObjectIdentifier(operation)] = 3
                    }
                    finished += 1
                default:
                    break
                }
                if finished == count { break }
            }
        })
        #expect(wrongOrder.value == 0)
        let final = states.withLock { $0 }
        #expect(final.count == count && final.values.allSatisfy { $0 == 3 })
    }

    /// An operation freed before it finished (cancelled, never started) ends its streams;
    /// they waited for a `finished` that never comes (found by a user-side probe).
    @Test func testOperationStreamEndsWhenAnUnfinishedOperationIsFreed() async {
        let received = Locked<[SQOperation.StateChange]>([])
        let stream: AsyncStream<SQOperation.StateChange>
        weak var freed: SQBlockOperation?
        do {
            let operation = SQBlockOperation {}
            freed = operation
            stream = operation.stateChanges
            operation.cancel()
        }
        #expect(freed == nil)
        #expect(await completesAsync {
            for await change in stream { received.withLock { $0.append(change) } }
        })
        #expect(received.withLock { $0 } == [.cancelled])
    }

    /// A queue's `.finished` observer that waits for the next operation (the next one of its
    /// own queue of width 1, or a dependent in another queue) sees it run. That operation was
    /// handed to the finishing thread to start after the finish, which runs the observer
    /// first: the wait could never end (found by a user-side probe; a slow observer held the
    /// next operation back by as long).
    @Test(arguments: [true, false])
    func testObserverWaitingForTheNextOperationSeesItRun(sameQueue: Bool) {
        let first = SQOperationQueue()
        first.maxConcurrentOperationCount = 1
        let second = sameQueue ? first : SQOperationQueue()
        let nextRan = SQSemaphore(value: 0)
        let observerSawIt = SQSemaphore(value: 0)
        // a finishes once both are added: the thread adding them delivers the queue's changes
        // while it adds (whoever publishes delivers), and an observer run there, before b is
        // added, would wait for b for ever.
        let gate = SQSemaphore(value: 0)
        let a = SQBlockOperation { gate.wait() }
        let b = SQBlockOperation { nextRan.signal() }
        let observation = first.observeStateChanges { [unowned a] change in
            if case .finished(let operation) = change, operation === a,
                nextRan.wait(timeout: patience()) == .success
            {
                observerSawIt.signal()
            }
        }
        if sameQueue {
            first.addOperations([a, b], waitUntilFinished: false)
        } else {
            b.addDependency(a)
            second.addOperation(b)
            first.addOperation(a)
        }
        gate.signal()
        #expect(arrived(observerSawIt))
        #expect(completes {
            first.waitUntilAllOperationsAreFinished()
            second.waitUntilAllOperationsAreFinished()
        })
        observation.invalidate()
    }

    /// `waitUntilFinished()` from the operation's own `.finished` observer returns at once, as
    /// from its completion block: the operation is finished, and the rest of its finish runs
    /// after the observer on the same thread. It stopped with a message about waiting from
    /// inside `start()` (found by a user-side probe).
    @Test func testWaitingFromTheOperationsOwnFinishedObserverReturns() {
        let queue = SQOperationQueue()
        let operation = SQBlockOperation {}
        let returned = SQSemaphore(value: 0)
        let observation = operation.observeStateChanges { [unowned operation] change in
            if change == .finished {
                operation.waitUntilFinished()
                returned.signal()
            }
        }
        queue.addOperation(operation)
        #expect(arrived(returned))
        #expect(finishes(operation))
        _ = observation
    }

    @Test func testQueueStreamEndsWhenTheQueueIsFreed() async {
        let count = Counter()
        let stream: AsyncStream<SQOperationQueue.StateChange>
        do {
            let queue = SQOperationQueue()
            stream = queue.stateChanges
            let operation = SQBlockOperation {}
            queue.addOperation(operation)
            #expect(finishes(operation))
        }
        // The queue is gone (it emptied, and nobody holds it): the stream ends.
        #expect(await completesAsync {
            for await _ in stream { count.add() }
        })
        #expect(count.value == 3)  // added, started, finished; then the end
    }
}
