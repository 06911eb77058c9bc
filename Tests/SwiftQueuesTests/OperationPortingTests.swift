import Foundation
import SwiftQueues
import Testing

/// Code ported from Foundation's Operation that behaved differently here (found by running
/// the same programs against both).
@Suite struct OperationPortingTests {
    /// `waitUntilFinished()` from the operation's own completion block returns at once, as in
    /// Foundation: the operation is finished (`isFinished` is true) when its completion block
    /// runs. It used to wait for the end of its own finish: for ever off a queue, and with a
    /// misleading "inside its own start()" stop in a queue.
    @Test func testWaitFromOwnCompletionBlockReturns() {
        let log = Log<String>()
        let alone = SQBlockOperation {}
        alone.completionBlock = {
            alone.waitUntilFinished()
            log.append("alone \(alone.isFinished)")
        }
        let thread = Thread { alone.start() }
        thread.start()
        #expect(finishes(alone))

        let queued = SQBlockOperation {}
        queued.completionBlock = {
            queued.waitUntilFinished()
            log.append("queued \(queued.isFinished)")
        }
        let queue = SQOperationQueue()
        queue.addOperation(queued)
        #expect(finishes(queued))
        #expect(Set(log.values) == ["alone true", "queued true"])
    }

    /// Assigning the priority an operation already has changes nothing: it keeps its place
    /// among the ready operations of its priority (it used to go to the back).
    @Test func testSettingTheSamePriorityKeepsThePlace() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let log = Log<String>()
        let operations = ["a", "b", "c", "d"].map { name in SQBlockOperation { log.append(name) } }
        for operation in operations {
            queue.addOperation(operation)
        }
        operations[0].queuePriority = .normal
        operations[1].queuePriority = operations[1].queuePriority
        queue.isSuspended = false
        #expect(empties(queue))
        #expect(log.values == ["a", "b", "c", "d"])
    }

    /// `SQOperationQueue.current` is the operation's queue in every execution block of a block
    /// operation, also in those that run on other pool threads (they used to see nil there).
    @Test func testCurrentQueueInEveryExecutionBlock() {
        let queue = SQOperationQueue()
        let seen = Log<Bool>()
        for _ in 0..<5 {
            let operation = SQBlockOperation()
            let arrived = SQSemaphore(value: 0)
            // The first block runs on the thread that starts the operation and holds it until
            // the others have run: they run on other threads.
            operation.addExecutionBlock {
                seen.append(SQOperationQueue.current === queue)
                for _ in 0..<3 {
                    _ = arrived.wait(timeout: patience())
                }
            }
            for _ in 0..<3 {
                operation.addExecutionBlock {
                    seen.append(SQOperationQueue.current === queue)
                    arrived.signal()
                }
            }
            queue.addOperation(operation)
        }
        #expect(empties(queue))
        #expect(seen.values.count == 20)
        #expect(seen.values.allSatisfy { $0 })
    }

    /// A subclass that overrides `addOperation(_: SQOperation)` sees the operations that
    /// `addOperation(_:)` with a closure makes, as in Foundation (they bypassed it).
    @Test func testClosureAdditionGoesThroughTheOverride() {
        final class CountingQueue: SQOperationQueue, @unchecked Sendable {
            let added = Counter()
            override func addOperation(_ operation: SQOperation) {
                _ = added.add()
                super.addOperation(operation)
            }
        }
        let queue = CountingQueue()
        let ran = Counter()
        queue.addOperation(SQBlockOperation { _ = ran.add() })
        queue.addOperation { _ = ran.add() }
        #expect(empties(queue))
        #expect(queue.added.value == 2)
        #expect(ran.value == 2)
    }

    /// `isEqual(_:)` and `hash`, NSObject's, are called by ported code and overridden by ported
    /// subclasses; they did not exist here (a port failed to compile), and `==` and `Set` go
    /// through them as on NSObject.
    @Test func testIsEqualAndHashAsNSObject() {
        let a = SQBlockOperation {}
        let b = SQBlockOperation {}
        #expect(a.isEqual(a))
        #expect(!a.isEqual(b))
        #expect(!a.isEqual(nil))
        #expect(!a.isEqual("a"))
        #expect(a.hash == a.hash)
        #expect(a == a && a != b)
        let x = Keyed(key: 7)
        let y = Keyed(key: 7)
        #expect(x == y)
        #expect(Set([x, y]).count == 1)
        #expect(Set([x, y, Keyed(key: 8)]).count == 2)
    }
}

/// Equal by a key, as an NSObject subclass overriding isEqual and hash would be.
private final class Keyed: SQOperation, @unchecked Sendable {
    let key: Int
    init(key: Int) { self.key = key }
    override func isEqual(_ object: Any?) -> Bool { (object as? Keyed)?.key == key }
    override var hash: Int { key }
}
