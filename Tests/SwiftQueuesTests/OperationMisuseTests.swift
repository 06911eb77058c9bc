import SwiftQueues
import Testing

/// An operation that starts itself again from inside main().
final class RestartingOperation: SQOperation, @unchecked Sendable {
    override func main() { start() }
}

/// An operation that waits for itself from inside main().
final class SelfWaitingOperation: SQOperation, @unchecked Sendable {
    override func main() { waitUntilFinished() }
}


/// Misuse stops the process with a clear message (issue 12). Each case runs in a child
/// process (an exit test).
@Suite struct OperationMisuseTests {
    static func message(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    /// A completion block that waits for a dependent of its operation would wait for ever:
    /// the dependents start after the block returns. It stops with a message instead.
    @Test func testCompletionBlockWaitingForADependent() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            let first = SQBlockOperation {}
            first.name = "first"
            let second = SQBlockOperation {}
            second.name = "second"
            second.addDependency(first)
            first.completionBlock = { second.waitUntilFinished() }
            queue.addOperations([first, second], waitUntilFinished: true)
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"second\"> is waited for from "
                + "the completion block of <SQBlockOperation \"first\">, and depends on it"))
    }

    /// And for a dependent of a dependent (it hung with no message): c depends on b, b on a,
    /// and a's completion block waits for c.
    @Test func testCompletionBlockWaitingForAnIndirectDependent() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            let first = SQBlockOperation {}
            first.name = "first"
            let second = SQBlockOperation {}
            let third = SQBlockOperation {}
            third.name = "third"
            second.addDependency(first)
            third.addDependency(second)
            first.completionBlock = { third.waitUntilFinished() }
            queue.addOperations([first, second, third], waitUntilFinished: true)
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"third\"> is waited for from "
                + "the completion block of <SQBlockOperation \"first\">, and depends on it, "
                + "directly or through unfinished dependencies"))
    }

    /// The same for the next operation of a width-1 queue: the finishing one holds the slot.
    @Test func testCompletionBlockWaitingForTheNextOperationOfAWidthOneQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.maxConcurrentOperationCount = 1
            let first = SQBlockOperation {}
            first.name = "first"
            let second = SQBlockOperation {}
            second.name = "second"
            first.completionBlock = { second.waitUntilFinished() }
            // Both in the queue before the first runs (the check can only see a queue that
            // holds the operation).
            queue.isSuspended = true
            queue.addOperations([first, second], waitUntilFinished: false)
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"second\"> is waited for from "
                + "the completion block of <SQBlockOperation \"first\">, and waits in the same "
                + "queue of width 1"))
    }

    @Test func testAddingTwiceToTheSameQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.isSuspended = true
            let operation = SQOperation()
            operation.name = "twice"
            queue.addOperation(operation)
            queue.addOperation(operation)
        }
        #expect(Self.message(result).contains(
            "SQOperationQueue.addOperation(_:): <SQOperation \"twice\"> is already in this queue"))
    }

    @Test func testAddingToTwoQueues() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let first = SQOperationQueue()
            first.isSuspended = true
            let operation = SQOperation()
            operation.name = "shared"
            first.addOperation(operation)
            SQOperationQueue().addOperation(operation)
        }
        #expect(Self.message(result).contains("\"shared\"> is already in another queue"))
    }

    @Test func testAddingAFinishedOperation() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let operation = SQOperation()
            operation.start()
            SQOperationQueue().addOperation(operation)
        }
        #expect(Self.message(result).contains("has already finished"))
    }

    @Test func testStartingAnOperationThatIsNotReady() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let operation = SQOperation()
            operation.name = "early"
            operation.addDependency(SQOperation())
            operation.start()
        }
        #expect(Self.message(result).contains(
            "SQOperation.start(): <SQOperation \"early\"> is not ready "
                + "(1 unfinished dependencies)"))
    }

    @Test func testStartingARunningOperation() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            RestartingOperation().start()
        }
        #expect(Self.message(result).contains("is already executing"))
    }

    @Test func testStartingAFinishedOperation() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let operation = SQOperation()
            operation.start()
            operation.start()
        }
        #expect(Self.message(result).contains("has already finished"))
    }

    @Test func testStartingAQueuedOperationByHand() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.isSuspended = true
            let operation = SQOperation()
            queue.addOperation(operation)
            operation.start()
        }
        #expect(Self.message(result).contains("is in a queue; the queue starts it"))
    }

    @Test func testAddingABlockAfterStart() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let operation = SQBlockOperation()
            operation.addExecutionBlock { [unowned operation] in
                operation.addExecutionBlock {}  // while it runs
            }
            operation.start()
        }
        #expect(Self.message(result).contains(
            "SQBlockOperation.addExecutionBlock(_:): <SQBlockOperation 0x"))
        #expect(Self.message(result).contains("has already started"))
    }

    /// After it finished, the message says so (it said "started").
    @Test func testAddingABlockAfterFinish() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let operation = SQBlockOperation {}
            operation.start()
            operation.addExecutionBlock {}
        }
        #expect(Self.message(result).contains("has already finished; add blocks before it starts"))
    }

    @Test func testSettingTheUnderlyingQueueOfABusyQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.name = "busy"
            queue.isSuspended = true
            queue.addOperation {}
            queue.underlyingQueue = SQQueue(label: "late")
        }
        #expect(Self.message(result).contains(
            "SQOperationQueue.underlyingQueue: <SQOperationQueue \"busy\"> holds 1 operation(s)"))
    }

    @Test func testNegativeLimit() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            SQOperationQueue().maxConcurrentOperationCount = -2
        }
        #expect(Self.message(result).contains("maxConcurrentOperationCount = -2"))
    }

    @Test func testWaitingForItselfFromMain() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.addOperation(SelfWaitingOperation())
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(Self.message(result).contains("waits for itself from inside its own start()"))
    }

    @Test func testWaitingForItselfWhenStartedByHand() async {
        // Started by hand (no queue), directly and from inside another operation started by
        // hand: it waited for ever before.
        let direct = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            SelfWaitingOperation().start()
        }
        #expect(Self.message(direct).contains("waits for itself from inside its own start()"))
        let nested = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let outer = SQBlockOperation()
            outer.addExecutionBlock {
                SQBlockOperation { outer.waitUntilFinished() }.start()
            }
            outer.start()
        }
        #expect(Self.message(nested).contains("waits for itself from inside its own start()"))
    }

    @Test func testWaitingForTheQueueFromACompletionBlock() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            let done = SQSemaphore(value: 0)
            let operation = SQBlockOperation {}
            operation.completionBlock = {
                // The queue still holds the operation while its completion block runs.
                SQOperationQueue.current?.waitUntilAllOperationsAreFinished()
                done.signal()
            }
            queue.addOperation(operation)
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperationQueue.waitUntilAllOperationsAreFinished(): called from the completion "
                + "block of an operation of"))
    }

    /// addOperations(_:waitUntilFinished: true) from an operation of a width-1 queue, into
    /// that queue: the new operations wait for the slot the waiting one holds (Foundation
    /// hangs). It stops with a message instead.
    @Test func testWaitingInsideAWidthOneQueueForAnOperationOfIt() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.maxConcurrentOperationCount = 1
            let done = SQSemaphore(value: 0)
            let outer = SQBlockOperation {
                let inner = SQBlockOperation {}
                inner.name = "inner"
                SQOperationQueue.current?.addOperations([inner], waitUntilFinished: true)
                done.signal()
            }
            outer.name = "outer"
            queue.addOperation(outer)
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"inner\"> is waited for from "
                + "inside <SQBlockOperation \"outer\">, which holds the only slot of"))
    }

    /// The same with the operation waited for cancelled first: a cancelled operation of a
    /// queue still waits for a slot to finish (ours hung with no message, as Foundation does).
    @Test func testWaitingInsideAWidthOneQueueForACancelledOperationOfIt() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.maxConcurrentOperationCount = 1
            let done = SQSemaphore(value: 0)
            let other = SQBlockOperation {}
            other.name = "other"
            let first = SQBlockOperation {
                other.cancel()
                other.waitUntilFinished()
                done.signal()
            }
            first.name = "first"
            // Both in the queue before `first` starts (FIFO: `first` takes the slot).
            queue.isSuspended = true
            queue.addOperations([first, other], waitUntilFinished: false)
            queue.isSuspended = false
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"other\"> is waited for from "
                + "inside <SQBlockOperation \"first\">, which holds the only slot of"))
    }

    /// The completion block of an asynchronous operation (finished by its own code, on a
    /// thread of its choosing) that waits for its queue: it hung with no message (the check
    /// knew only completion blocks run by the queue's start path).
    @Test func testAsynchronousCompletionBlockWaitingForItsQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            let done = SQSemaphore(value: 0)
            let release = SQSemaphore(value: 0)
            release.signal()  // finishes at once (a semaphore must end at its initial value)
            let operation = FinisherOperation(release: release)
            operation.completionBlock = {
                queue.waitUntilAllOperationsAreFinished()
                done.signal()
            }
            queue.addOperation(operation)
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperationQueue.waitUntilAllOperationsAreFinished(): called from the completion "
                + "block of an operation of"))
    }

    /// And one that waits for the next operation of its width-1 queue, which waits for the
    /// slot the finishing operation holds until its completion block returns.
    @Test func testAsynchronousCompletionBlockWaitingForTheNextOperation() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            queue.maxConcurrentOperationCount = 1
            let done = SQSemaphore(value: 0)
            let release = SQSemaphore(value: 0)
            release.signal()  // finishes at once (a semaphore must end at its initial value)
            let operation = FinisherOperation(release: release)
            let next = SQBlockOperation {}
            next.name = "next"
            operation.completionBlock = {
                next.waitUntilFinished()
                done.signal()
            }
            queue.isSuspended = true
            queue.addOperations([operation, next], waitUntilFinished: false)
            queue.isSuspended = false
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperation.waitUntilFinished(): <SQBlockOperation \"next\"> is waited for from the "
                + "completion block of"))
    }

    /// The same wait in a queue of width 2 is fine: the inner operation takes the other slot.
    @Test func testWaitingInsideAWiderQueueForAnOperationOfIt() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 2
        let innerRuns = Counter()
        let outer = SQBlockOperation {
            let inner = SQBlockOperation { innerRuns.add() }
            SQOperationQueue.current?.addOperations([inner], waitUntilFinished: true)
        }
        queue.addOperation(outer)
        #expect(finishes(outer))
        #expect(innerRuns.value == 1)
    }

    @Test func testWaitingForTheQueueFromItsOwnOperation() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQOperationQueue()
            let done = SQSemaphore(value: 0)
            queue.addOperation {
                SQOperationQueue.current?.waitUntilAllOperationsAreFinished()
                done.signal()
            }
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
        #expect(Self.message(result).contains(
            "SQOperationQueue.waitUntilAllOperationsAreFinished(): called from an operation of"))
    }
}
