import Synchronization
import SwiftQueues
import Testing

// MARK: - Helpers shared by the Operation*Tests files

/// An operation that records each run of `main()` and can be held inside it.
final class RecordingOperation: SQOperation, @unchecked Sendable {
    let runs = Counter()
    let started = SQSemaphore(value: 0)
    let proceed: SQSemaphore?
    let log: Log<String>?
    let tag: String

    init(_ tag: String = "", log: Log<String>? = nil, holdUntil proceed: SQSemaphore? = nil) {
        self.tag = tag
        self.log = log
        self.proceed = proceed
        super.init()
        name = tag
    }

    override func main() {
        runs.add()
        log?.append(tag)
        started.signal()
        if let proceed {
            #expect(proceed.wait(timeout: patience()) == .success)
        }
    }
}

/// Waits for `semaphore` with the tests' patience; false on a timeout.
func arrived(_ semaphore: SQSemaphore) -> Bool {
    semaphore.wait(timeout: patience()) == .success
}

/// Runs `body` on a pool thread; true if it returns within the tests' patience (a broken
/// queue makes a test fail after the patience instead of hanging).
func completes(_ body: @escaping @Sendable () -> Void) -> Bool {
    let done = SQSemaphore(value: 0)
    SQQueue.global().async {
        body()
        done.signal()
    }
    return done.wait(timeout: patience()) == .success
}

/// `operation.waitUntilFinished()` returns within the tests' patience.
func finishes(_ operation: SQOperation) -> Bool {
    completes { operation.waitUntilFinished() }
}

/// `queue.waitUntilAllOperationsAreFinished()` returns within the tests' patience.
func empties(_ queue: SQOperationQueue) -> Bool {
    completes { queue.waitUntilAllOperationsAreFinished() }
}

/// Runs the async `body` in a task; true if it returns within the tests' patience. Returns
/// after the patience even if `body` never does (the task is then left behind), so a broken
/// implementation fails the test instead of hanging it; nothing blocks a thread meanwhile.
func completesAsync(_ body: @escaping @Sendable () async -> Void) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let pending = Locked<CheckedContinuation<Bool, Never>?>(continuation)
        @Sendable func resume(_ returned: Bool) {
            pending.withLock { $0.take() }?.resume(returning: returned)
        }
        Task {
            await body()
            resume(true)
        }
        SQQueue.global().asyncAfter(deadline: patience()) { resume(false) }
    }
}

/// A block operation that signals `done` from its completion block.
func signallingOperation(_ done: SQSemaphore, _ body: @escaping @Sendable () -> Void = {})
    -> SQBlockOperation
{
    let operation = SQBlockOperation(block: body)
    operation.completionBlock = { done.signal() }
    return operation
}

/// SQOperation and SQBlockOperation on their own, and dependencies (issue 12).
@Suite struct OperationTests {
    @Test func testManualStartRunsMainOnceOnTheCallingThread() {
        let operation = RecordingOperation("manual")
        #expect(operation.isReady && !operation.isExecuting && !operation.isFinished)
        #expect(!operation.isAsynchronous && !operation.isConcurrent)
        operation.start()
        #expect(operation.runs.value == 1)
        #expect(operation.isFinished && !operation.isExecuting && !operation.isCancelled)
    }

    @Test func testIsExecutingDuringMain() {
        let seen = Log<Bool>()
        final class Probe: SQOperation, @unchecked Sendable {
            let seen: Log<Bool>
            init(_ seen: Log<Bool>) { self.seen = seen }
            override func main() { seen.append(isExecuting); seen.append(isFinished) }
        }
        let probe = Probe(seen)
        probe.start()
        #expect(seen.values == [true, false])
    }

    @Test func testCompletionBlockRunsExactlyOnceThenIsReleased() {
        let calls = Counter()
        let released = SQSemaphore(value: 0)
        let operation = RecordingOperation("done")
        operation.completionBlock = { [token = DeinitSignal(released)] in
            _ = token
            calls.add()
        }
        operation.start()
        #expect(finishes(operation))
        #expect(calls.value == 1)
        #expect(operation.completionBlock == nil)
        #expect(arrived(released))  // the captured object is freed: the block was released
    }

    @Test func testCompletionBlockRunsForCancelledOperation() {
        let calls = Counter()
        let operation = RecordingOperation("cancelled")
        operation.completionBlock = { calls.add() }
        operation.cancel()
        #expect(operation.isCancelled && operation.isReady && !operation.isFinished)
        operation.start()
        #expect(operation.runs.value == 0)
        #expect(operation.isFinished)
        #expect(calls.value == 1)
    }

    @Test func testCompletionBlockRunsOnceInQueue() {
        let queue = SQOperationQueue()
        let calls = Counter()
        var operations: [SQOperation] = []
        for index in 0..<200 {
            let operation = SQBlockOperation {}
            operation.completionBlock = { calls.add() }
            if index % 3 == 0 { operation.cancel() }
            operations.append(operation)
        }
        let returned = completes { [operations] in
            queue.addOperations(operations, waitUntilFinished: true)
        }
        #expect(returned)
        #expect(calls.value == 200)
    }

    @Test func testCancelAfterFinishChangesNothing() {
        let operation = RecordingOperation()
        operation.start()
        operation.cancel()
        #expect(!operation.isCancelled)
        #expect(operation.isFinished && operation.runs.value == 1)
    }

    @Test func testDependencyMakesOperationNotReadyUntilFinished() {
        let first = RecordingOperation("first")
        let second = RecordingOperation("second")
        second.addDependency(first)
        second.addDependency(first)  // once only
        #expect(second.dependencies.count == 1 && second.dependencies[0] === first)
        #expect(!second.isReady)
        first.start()
        #expect(second.isReady)
        second.start()
        #expect(second.runs.value == 1)
        #expect(second.dependencies.count == 1)  // kept after finishing, as Foundation does
    }

    @Test func testDependencyOnFinishedOperationIsReadyAtOnce() {
        let first = RecordingOperation()
        first.start()
        let second = RecordingOperation()
        second.addDependency(first)
        #expect(second.isReady)
    }

    @Test func testDependenciesAcrossQueuesAndOnOperationsInNoQueue() {
        let queueA = SQOperationQueue()
        let queueB = SQOperationQueue()
        let log = Log<String>()
        let manual = RecordingOperation("manual", log: log)
        let onA = RecordingOperation("a", log: log)
        let onB = RecordingOperation("b", log: log)
        onA.addDependency(manual)
        onB.addDependency(onA)
        queueB.addOperation(onB)
        queueA.addOperation(onA)
        // Nothing may run before the operation in no queue: prove it by finishing that one
        // only now, and checking the order afterwards.
        manual.start()
        #expect(finishes(onB))
        #expect(log.values == ["manual", "a", "b"])
    }

    @Test func testRemovingAnUnfinishedDependencyMakesTheOperationReady() {
        let queue = SQOperationQueue()
        let never = RecordingOperation("never")  // never started
        let other = RecordingOperation("other")
        let dependent = RecordingOperation("dependent")
        dependent.addDependency(never)
        dependent.addDependency(other)
        queue.addOperation(dependent)
        dependent.removeDependency(never)
        #expect(!dependent.isReady)  // `other` still holds it
        #expect(dependent.dependencies.count == 1 && dependent.dependencies[0] === other)
        dependent.removeDependency(other)
        #expect(dependent.isReady)
        #expect(finishes(dependent))
        #expect(dependent.runs.value == 1)
        #expect(never.runs.value == 0)
        dependent.removeDependency(never)  // not a dependency any more: nothing happens
    }

    /// Many operations depend on one root; two thirds of them remove that dependency, in a
    /// scrambled order (front, back, middle): those become ready at once, the others stay held
    /// and, when the root finishes, become ready in the order they depended on it (a width-1
    /// queue runs them in that order). The root's list of dependents leaves holes and compacts
    /// (each removal shifted the rest: O(n²) for n removals).
    @Test func testRemovingASharedDependencyInAnyOrder() {
        let count = 3_000
        let kept = count / 3
        let root = SQBlockOperation {}
        let ran = Log<Int>()
        let dependents = (0..<count).map { index in SQBlockOperation { ran.append(index) } }
        for dependent in dependents {
            dependent.addDependency(root)
        }
        var order = Array(kept..<count)
        var seed: UInt64 = 0x5eed
        for i in stride(from: order.count - 1, to: 0, by: -1) {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            order.swapAt(i, Int(seed >> 33) % (i + 1))
        }
        for index in order {
            dependents[index].removeDependency(root)
        }
        #expect(dependents[kept...].allSatisfy { $0.isReady && $0.dependencies.isEmpty })
        #expect(dependents[..<kept].allSatisfy { !$0.isReady && $0.dependencies.count == 1 })
        let free = SQOperationQueue()
        free.addOperations(Array(dependents[kept...]), waitUntilFinished: true)
        #expect(ran.values.count == count - kept)
        let held = SQOperationQueue()
        held.maxConcurrentOperationCount = 1
        held.addOperations(Array(dependents[..<kept]), waitUntilFinished: false)
        root.start()
        #expect(empties(held))
        #expect(Array(ran.values[(count - kept)...]) == Array(0..<kept))
    }

    /// Operations are equal and hash by identity, as Foundation's (NSObject): code that keeps
    /// them in a set or looks them up in `operations` ports unchanged (it did not compile).
    @Test func testOperationsCompareByIdentity() {
        let first = SQBlockOperation {}
        let second = SQBlockOperation {}
        #expect(first == first && first != second)
        let set: Set<SQOperation> = [first, second, first]
        #expect(set.count == 2 && set.contains(second))
        let queue = SQOperationQueue()
        queue.isSuspended = true
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(queue.operations.contains(second))
        #expect(queue.operations.firstIndex(of: second) == 1)
        queue.isSuspended = false
        #expect(empties(queue))
    }

    @Test func testRemovingAFinishedDependencyKeepsReadinessRight() {
        let first = RecordingOperation()
        let second = RecordingOperation()
        second.addDependency(first)
        first.start()
        second.removeDependency(first)
        #expect(second.isReady && second.dependencies.isEmpty)
        second.start()
        #expect(second.runs.value == 1)
    }

    @Test func testCancellingBeforeDependenciesFinishFinishesWithoutMain() {
        let queue = SQOperationQueue()
        let dependency = RecordingOperation("dependency")  // in no queue, not started
        let cancelled = RecordingOperation("cancelled")
        let after = RecordingOperation("after")
        cancelled.addDependency(dependency)
        after.addDependency(cancelled)
        queue.addOperations([cancelled, after], waitUntilFinished: false)
        cancelled.cancel()
        #expect(finishes(cancelled))
        #expect(finishes(after))
        #expect(cancelled.runs.value == 0)
        #expect(cancelled.isCancelled && cancelled.isFinished)
        #expect(after.runs.value == 1 && !after.isCancelled)  // dependents are not cancelled
        #expect(!dependency.isFinished && dependency.runs.value == 0)
    }

    @Test func testCancellingWhileRunningIsSeenByMain() {
        final class Spinner: SQOperation, @unchecked Sendable {
            let started = SQSemaphore(value: 0)
            let sawCancel = Counter()
            override func main() {
                started.signal()
                let deadline = patience()
                while !isCancelled && SQTime.now() < deadline {
                    busyWork()
                }
                if isCancelled { sawCancel.add() }
            }
        }
        let queue = SQOperationQueue()
        let spinner = Spinner()
        let calls = Counter()
        spinner.completionBlock = { calls.add() }
        queue.addOperation(spinner)
        #expect(arrived(spinner.started))
        spinner.cancel()
        #expect(finishes(spinner))
        #expect(spinner.sawCancel.value == 1)
        #expect(spinner.isCancelled && spinner.isFinished)
        #expect(calls.value == 1)
    }

    @Test func testCancelledDependencyReleasesItsDependents() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let dependency = RecordingOperation("dependency")
        let dependent = RecordingOperation("dependent")
        dependent.addDependency(dependency)
        queue.addOperations([dependency, dependent], waitUntilFinished: false)
        dependency.cancel()
        queue.isSuspended = false
        #expect(finishes(dependent))
        #expect(dependency.runs.value == 0 && dependency.isFinished)
        #expect(dependent.runs.value == 1)
    }

    @Test func testCycleRunsNothingUntilCancelled() {
        let queue = SQOperationQueue()
        let first = RecordingOperation("first")
        let second = RecordingOperation("second")
        let third = RecordingOperation("third")
        first.addDependency(third)
        second.addDependency(first)
        third.addDependency(second)
        let selfish = RecordingOperation("self")
        selfish.addDependency(selfish)
        queue.addOperations([first, second, third, selfish], waitUntilFinished: false)
        // No event can show that nothing starts: watch a bounded window, then prove progress.
        #expect(queue.operationCount == 4)
        _ = SQSemaphore(value: 0).wait(timeout: shortly())
        #expect(first.runs.value + second.runs.value + third.runs.value + selfish.runs.value == 0)
        #expect(!first.isReady && !second.isReady && !third.isReady && !selfish.isReady)
        first.cancel()  // breaks the cycle: second, then third, run
        selfish.cancel()
        #expect(empties(queue))
        #expect(first.runs.value == 0 && second.runs.value == 1 && third.runs.value == 1)
        #expect(selfish.runs.value == 0 && selfish.isFinished)
        first.removeDependency(third)  // break the reference cycle the test made
        second.removeDependency(first)
        third.removeDependency(second)
        selfish.removeDependency(selfish)
    }

    @Test func testLongChainIsReleasedWithoutRecursion() {
        // A finished chain holds its dependencies; dropping the last operation must not
        // release 100k objects recursively (that would overflow the stack).
        let released = SQSemaphore(value: 0)
        do {
            var previous: SQOperation = RecordingOperation()
            previous.start()
            let marker = DeinitSignal(released)
            let first = SQBlockOperation { _ = marker }
            first.start()
            previous = first
            for _ in 0..<100_000 {
                let next = SQBlockOperation {}
                next.addDependency(previous)
                next.start()
                previous = next
            }
        }
        #expect(arrived(released))
    }

    @Test func testBlockOperationRunsEveryBlockConcurrently() {
        // Two blocks that each wait for the other: only concurrent blocks both get through.
        let toFirst = SQSemaphore(value: 0)
        let toSecond = SQSemaphore(value: 0)
        let met = Counter()
        let operation = SQBlockOperation {
            toSecond.signal()
            if arrived(toFirst) { met.add() }
        }
        operation.addExecutionBlock {
            toFirst.signal()
            if arrived(toSecond) { met.add() }
        }
        let ran = Counter()
        for _ in 0..<8 {
            operation.addExecutionBlock { ran.add() }
        }
        #expect(operation.executionBlocks.count == 10)
        let returned = completes {
            SQOperationQueue().addOperations([operation], waitUntilFinished: true)
        }
        #expect(returned)
        #expect(met.value == 2)
        #expect(ran.value == 8)  // finished only once every block returned
    }

    @Test func testBlockOperationStartedManuallyReturnsAfterEveryBlock() {
        let ran = Counter()
        let operation = SQBlockOperation()
        #expect(operation.executionBlocks.isEmpty)
        for _ in 0..<5 {
            operation.addExecutionBlock {
                busyWork()
                ran.add()
            }
        }
        operation.start()
        #expect(ran.value == 5)
        #expect(operation.isFinished)
    }

    @Test func testCancelledBlockOperationRunsNoBlock() {
        let ran = Counter()
        let operation = SQBlockOperation { ran.add() }
        operation.addExecutionBlock { ran.add() }
        operation.cancel()
        let returned = completes {
            SQOperationQueue().addOperations([operation], waitUntilFinished: true)
        }
        #expect(returned)
        #expect(ran.value == 0 && operation.isFinished)
    }

    @Test func testNameDescriptionAndPriorities() {
        let operation = SQOperation()
        #expect(operation.name == nil)
        operation.name = "named"
        #expect(operation.name == "named")
        #expect(operation.description.contains("\"named\""))
        #expect(operation.queuePriority == .normal)
        operation.queuePriority = .veryHigh
        #expect(operation.queuePriority == .veryHigh)
        #expect(SQOperation.QueuePriority.low.rawValue == -4)
        #expect(operation.qualityOfService == .default)
        operation.qualityOfService = .utility
        #expect(operation.qualityOfService == .utility)
    }

    @Test func testThreadPriorityMapsOntoQualityOfService() {
        let operation = SQOperation()
        #expect(operation.threadPriority == 0.5)
        let expected: [(Double, SQQoS.QoSClass)] = [
            (0.0, .background), (0.2, .background), (0.3, .utility), (0.5, .default),
            (0.7, .default), (0.8, .userInitiated), (1.0, .userInitiated), (7, .userInitiated),
            (-1, .background),
        ]
        for (priority, qos) in expected {
            operation.threadPriority = priority
            #expect(operation.qualityOfService == qos, "threadPriority \(priority)")
        }
        #expect(operation.threadPriority == 0.0)  // clamped
    }

    @Test func testReturningOperationStoresValueOrTypedError() throws {
        let good = SQOperation.Returning<Int, TestError> { () throws(TestError) -> Int in 42 }
        let bad = SQOperation.Returning<Int, TestError> { () throws(TestError) -> Int in
            throw TestError(code: 7)
        }
        let skipped = SQOperation.Returning<Int, TestError> { () throws(TestError) -> Int in 1 }
        #expect(good.result == nil)
        skipped.cancel()
        let returned = completes {
            SQOperationQueue().addOperations([good, bad, skipped], waitUntilFinished: true)
        }
        #expect(returned)
        #expect(try good.result?.get() == 42)
        #expect(throws: TestError(code: 7)) { try bad.result?.get() }
        #expect(skipped.result == nil)
    }

    @Test func testReturningSubclassOverridesRun() async {
        final class Square: SQOperation.Returning<Int, Never>, @unchecked Sendable {
            let input: Int
            init(_ input: Int) {
                self.input = input
                super.init()
            }
            override func run() -> Int { input * input }
        }
        let square = Square(12)
        SQOperationQueue().addOperation(square)
        #expect(finishes(square))  // bounded first, so the await below cannot hang
        let result = await square.finishedResult
        #expect(result.map { $0.get() } == 144)
    }

}
