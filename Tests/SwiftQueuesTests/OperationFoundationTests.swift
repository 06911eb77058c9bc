import Foundation
import SwiftQueues
import Testing

/// The same asynchronous operation, written once against Foundation and once against
/// SwiftQueues: the only difference is the superclass.
final class FoundationGuideOperation: Operation, @unchecked Sendable {
    private let lock = NSLock()
    private var executing = false
    private var finishedFlag = false
    let done: @Sendable () -> Void
    init(done: @escaping @Sendable () -> Void) { self.done = done }
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.lock(); defer { lock.unlock() }; return executing }
    override var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return finishedFlag }
    override func start() {
        willChangeValue(forKey: "isExecuting")
        lock.lock(); executing = true; lock.unlock()
        didChangeValue(forKey: "isExecuting")
        DispatchQueue.global().async {
            self.done()
            self.willChangeValue(forKey: "isFinished")
            self.willChangeValue(forKey: "isExecuting")
            self.lock.lock(); self.executing = false; self.finishedFlag = true; self.lock.unlock()
            self.didChangeValue(forKey: "isExecuting")
            self.didChangeValue(forKey: "isFinished")
        }
    }
}

final class PortedGuideOperation: SQOperation, @unchecked Sendable {
    private let lock = NSLock()
    private var executing = false
    private var finishedFlag = false
    let done: @Sendable () -> Void
    init(done: @escaping @Sendable () -> Void) { self.done = done }
    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.lock(); defer { lock.unlock() }; return executing }
    override var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return finishedFlag }
    override func start() {
        willChangeValue(forKey: "isExecuting")
        lock.lock(); executing = true; lock.unlock()
        didChangeValue(forKey: "isExecuting")
        DispatchQueue.global().async {
            self.done()
            self.willChangeValue(forKey: "isFinished")
            self.willChangeValue(forKey: "isExecuting")
            self.lock.lock(); self.executing = false; self.finishedFlag = true; self.lock.unlock()
            self.didChangeValue(forKey: "isExecuting")
            self.didChangeValue(forKey: "isFinished")
        }
    }
}

/// Foundation's Operation and SQOperation in one file (issue 12): no name collides, and the
/// two kinds of queue work side by side, each waiting for the other's operations.
@Suite struct OperationFoundationTests {
    @Test func testOperationsOfBothKindsSideBySide() {
        let foundationQueue = OperationQueue()
        let sqQueue = SQOperationQueue()
        foundationQueue.maxConcurrentOperationCount = 2
        sqQueue.maxConcurrentOperationCount = 2
        let count = Counter()

        let foundationBlock = BlockOperation { count.add() }
        foundationBlock.addExecutionBlock { count.add() }
        let sqBlock = SQBlockOperation { count.add() }
        sqBlock.addExecutionBlock { count.add() }
        foundationBlock.queuePriority = .high
        sqBlock.queuePriority = .high
        foundationBlock.qualityOfService = .utility
        sqBlock.qualityOfService = .utility

        let foundationGuide = FoundationGuideOperation { count.add() }
        let sqGuide = PortedGuideOperation { count.add() }

        // Each kind of queue waits for an operation of the other kind (through a bridge
        // operation of its own kind).
        let sqDone = SQSemaphore(value: 0)
        sqGuide.completionBlock = { sqDone.signal() }
        let foundationDone = DispatchSemaphore(value: 0)
        foundationGuide.completionBlock = { foundationDone.signal() }
        let bridgeToSQ = BlockOperation {
            if sqDone.wait(timeout: patience()) == .success { count.add() }
        }
        let bridgeToFoundation = SQBlockOperation {
            if foundationDone.wait(timeout: .now() + 60) == .success { count.add() }
        }
        foundationQueue.addOperations(
            [foundationBlock, foundationGuide, bridgeToSQ], waitUntilFinished: false)
        sqQueue.addOperations([sqBlock, sqGuide, bridgeToFoundation], waitUntilFinished: false)
        foundationQueue.waitUntilAllOperationsAreFinished()
        #expect(empties(sqQueue))
        #expect(count.value == 8)
        #expect(foundationGuide.isFinished && sqGuide.isFinished)
        let names: (Operation.QueuePriority, SQOperation.QueuePriority) = (.veryHigh, .veryHigh)
        #expect(names.0.rawValue == names.1.rawValue)
    }
}
