import Foundation
import SwiftQueues
import Testing

/// Counts the deinits of the operations of one test.
private final class Freed: Sendable {
    let count = Counter()
    /// Signalled by each deinit.
    let each = SQSemaphore(value: 0)
}

private final class CountedOperation: SQOperation, @unchecked Sendable {
    let freed: Freed
    init(_ freed: Freed) { self.freed = freed }
    deinit {
        freed.count.add()
        freed.each.signal()
    }
}

private final class CountedFoundationOperation: Operation, @unchecked Sendable {
    let freed: Freed
    init(_ freed: Freed) { self.freed = freed }
    deinit { freed.count.add() }
}

/// Operations that depend on each other and are let go without running are freed, as with
/// Foundation (issue 12): an operation holds its dependencies, and a dependency's list of
/// dependents does not hold them back.
@Suite struct OperationLifetimeTests {
    /// A graph built and then dropped (the request failed before it was queued). Each check
    /// runs the same code on Foundation's Operation first: what it frees, SwiftQueues frees.
    @Test func testOperationsThatNeverRunAreFreed() {
        let foundationFreed = Freed()
        do {
            let first = CountedFoundationOperation(foundationFreed)
            let second = CountedFoundationOperation(foundationFreed)
            let third = CountedFoundationOperation(foundationFreed)
            second.addDependency(first)
            third.addDependency(second)
            third.addDependency(first)
        }
        #expect(foundationFreed.count.value == 3)

        let freed = Freed()
        weak var firstWeak: SQOperation?
        do {
            let first = CountedOperation(freed)
            let second = CountedOperation(freed)
            let third = CountedOperation(freed)
            second.addDependency(first)
            third.addDependency(second)
            third.addDependency(first)
            firstWeak = first
        }
        #expect(firstWeak == nil)
        #expect(freed.count.value == 3)
    }

    /// A cancelled dependent (ready, never started) and a dependent that removed and re-added
    /// its dependency, dropped while their dependency never runs.
    @Test func testCancelledDependentsOfAnOperationThatNeverRunsAreFreed() {
        let freed = Freed()
        do {
            let dependency = CountedOperation(freed)
            let cancelled = CountedOperation(freed)
            cancelled.addDependency(dependency)
            cancelled.cancel()
            #expect(cancelled.isReady)
            let readded = CountedOperation(freed)
            readded.addDependency(dependency)
            readded.removeDependency(dependency)
            readded.addDependency(dependency)
        }
        #expect(freed.count.value == 3)
    }

    /// A dependent let go while its dependency waits in a queue: the dependency still runs and
    /// finishes, and releases its other dependents (which run), without touching the one that
    /// is gone.
    @Test func testADependentFreedBeforeItsDependencyFinishes() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let freed = Freed()
        let ran = SQSemaphore(value: 0)
        let dependency = SQBlockOperation {}
        let kept = SQBlockOperation { ran.signal() }
        do {
            let dropped = CountedOperation(freed)
            dropped.addDependency(dependency)
            kept.addDependency(dependency)
            let another = CountedOperation(freed)
            another.addDependency(dependency)
        }
        #expect(freed.count.value == 2)
        queue.addOperations([dependency, kept], waitUntilFinished: false)
        queue.isSuspended = false
        #expect(arrived(ran))
        queue.waitUntilAllOperationsAreFinished()
        #expect(dependency.isFinished && kept.isFinished)
    }

    /// Dependents dropped on other threads while their dependency finishes: each is either
    /// released by the dependency (and freed after) or gone first; every one is freed exactly
    /// once, and the dependents the test keeps all run.
    @Test func testDependentsDroppedWhileTheirDependencyFinishes() {
        let rounds = 2_000
        let freed = Freed()
        let ran = Counter()
        let queue = SQOperationQueue()
        let dropper = SQQueue(label: "test.dropper", attributes: .concurrent)
        let group = SQGroup()
        for _ in 0..<rounds {
            let dependency = SQBlockOperation {}
            let kept = SQBlockOperation { ran.add() }
            kept.addDependency(dependency)
            let doomed = (0..<3).map { _ in CountedOperation(freed) }
            for operation in doomed {
                operation.addDependency(dependency)
            }
            queue.addOperation(dependency)
            queue.addOperation(kept)
            // The last references go on other threads, racing with the dependency's finish.
            for operation in doomed {
                dropper.async(group: group) { _ = operation.isReady }
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran.value == rounds)
        // The dropper's closures (and the operations with them) go just after the group is
        // left: wait for every deinit.
        var arrivals = 0
        while arrivals < 3 * rounds && arrived(freed.each) {
            arrivals += 1
        }
        #expect(arrivals == 3 * rounds)
        #expect(freed.count.value == 3 * rounds)
    }
}
