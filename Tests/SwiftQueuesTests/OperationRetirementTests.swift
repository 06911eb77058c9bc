#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SwiftQueues
import Testing

/// An object whose token's deinit reports whether it ran on a given thread while that thread
/// was inside `addOperation` (see `adding(on:_:)`).
private final class Released: @unchecked Sendable {
    let released = SQSemaphore(value: 0)
    /// The adding thread, while it adds.
    private let adder = Locked<pthread_t?>(nil)
    private let insideAdd = Locked<Bool>(false)

    final class Token: @unchecked Sendable {
        let owner: Released
        init(_ owner: Released) { self.owner = owner }
        deinit {
            let here = pthread_self()
            let inside = owner.adder.withLock { $0.map { pthread_equal($0, here) != 0 } ?? false }
            owner.insideAdd.withLock { $0 = inside }
            owner.released.signal()
        }
    }

    /// Runs `body` (which adds operations) marked as the adding thread's time inside
    /// `addOperation`.
    func adding(_ body: () -> Void) {
        adder.withLock { $0 = pthread_self() }
        body()
        adder.withLock { $0 = nil }
    }

    /// Whether the token was released within the tests' patience.
    var wasReleased: Bool { arrived(released) }

    /// Whether it was released on the adding thread while that thread was adding. (Anywhere
    /// else is fine, the test thread included: a pool thread that waits runs queued work.)
    var releasedInsideAdd: Bool { insideAdd.withLock { $0 } }
}

/// An operation subclass whose deinit hands its token on: a dependency that user code holds.
private final class TokenOperation: SQOperation, @unchecked Sendable {
    let token: Released.Token
    init(_ token: Released.Token) { self.token = token }
}

/// Adds a closure to `queue` and returns the operation the queue made for it (through
/// `operations`, as user code can); `queue` must be suspended.
private func queueMadeOperation(
    _ queue: SQOperationQueue, _ body: @escaping @Sendable () -> Void = {}
) -> SQOperation {
    queue.addOperation(body)
    return queue.operations.last!
}

/// Leaves in `queue` a finished operation it made for a closure, retired (a blocker, which
/// `unblock` releases, keeps the queue busy), with user code attached after it finished: a
/// dependency holding a token of `watcher`. The caller keeps no reference to either.
private func retireWithToken(_ queue: SQOperationQueue, unblock: SQSemaphore, watcher: Released)
{
    queue.isSuspended = true
    let target = queueMadeOperation(queue)
    queue.addOperation { _ = unblock.wait(timeout: patience()) }
    queue.isSuspended = false
    #expect(completes { target.waitUntilFinished() })
    target.addDependency(TokenOperation(Released.Token(watcher)))
}

/// The operations a queue makes for closures are freed by the next thread that adds one
/// (see SQOperationQueue+Retired.swift). Whatever user code they hold must still be let go
/// when it was before, and never on that adding thread (issue 12).
@Suite struct OperationRetirementTests {
    /// The closure (and what it captured) goes when the operation finishes, even while the
    /// operation itself waits, retired, in a queue that is still busy.
    @Test func testClosureIsReleasedWhenItsOperationFinishes() {
        let queue = SQOperationQueue()
        let unblock = SQSemaphore(value: 0)
        queue.addOperation { _ = unblock.wait(timeout: patience()) }  // keeps the queue busy
        let watcher = Released()
        do {
            let token = Released.Token(watcher)
            queue.addOperation { withExtendedLifetime(token) {} }
        }
        #expect(watcher.wasReleased)
        unblock.signal()
        #expect(empties(queue))
    }

    /// User code attached to a finished, retired operation (here a dependency added after it
    /// finished) is released on the pool when the adding thread frees the operation.
    @Test func testAttachedUserCodeIsNotReleasedOnTheAddingThread() {
        let queue = SQOperationQueue()
        let unblock = SQSemaphore(value: 0)
        let watcher = Released()
        retireWithToken(queue, unblock: unblock, watcher: watcher)
        // This thread adds: it frees the retired target, whose dependency (and so the
        // token) must not be released inside addOperation.
        watcher.adding {
            for _ in 0..<4 {
                queue.addOperation {}
            }
        }
        #expect(watcher.wasReleased)
        #expect(!watcher.releasedInsideAdd)
        unblock.signal()
        #expect(empties(queue))
    }

    /// A queue that empties frees its retired operations itself: none waits for an addition
    /// that may never come.
    @Test func testRetiredOperationsAreFreedWhenTheQueueEmpties() {
        let queue = SQOperationQueue()
        let unblock = SQSemaphore(value: 0)
        let watcher = Released()
        retireWithToken(queue, unblock: unblock, watcher: watcher)
        unblock.signal()  // the queue empties; nobody adds again
        #expect(watcher.wasReleased)
        #expect(empties(queue))
    }

    /// A busy queue that nobody adds to does not keep its finished operations: the pool
    /// thread whose finish fills the retired list frees the whole list (the old code kept
    /// the first 64 until the queue emptied, and the test timed out waiting for the token).
    @Test func testAFullRetiredListIsFreedWithoutAnAddition() {
        let queue = SQOperationQueue()
        let unblock = SQSemaphore(value: 0)
        let watcher = Released()
        do {
            // A finished dependency that holds the token: released when `target` is freed.
            let holder = TokenOperation(Released.Token(watcher))
            holder.start()
            queue.isSuspended = true
            let target = queueMadeOperation(queue)
            target.addDependency(holder)
            queue.addOperation { _ = unblock.wait(timeout: patience()) }  // keeps it busy
            // 127: with `target`, two full lists (of 64), in whatever order the pool runs
            // them; `target` is in one of them.
            for _ in 0..<127 {
                queue.addOperation {}
            }
        }
        // No thread adds from here on: `target` and the 127 closures finish and retire.
        queue.isSuspended = false
        #expect(watcher.wasReleased)
        #expect(queue.operationCount >= 1)  // the blocker: the queue never emptied
        unblock.signal()
        #expect(empties(queue))
    }

    /// Many closures through a busy queue, from two adding threads: each runs exactly once and
    /// every captured token is released (none is kept by a retired operation).
    @Test func testEveryClosureRunsOnceAndIsReleased() {
        let queue = SQOperationQueue()
        let ran = Counter()
        let released = Counter()
        final class Token: Sendable {
            let released: Counter
            init(_ released: Counter) { self.released = released }
            deinit { released.add() }
        }
        let perThread = 20_000
        let adders = SQGroup()
        for _ in 0..<2 {
            SQQueue.global().async(group: adders) {
                for _ in 0..<perThread {
                    let token = Token(released)
                    queue.addOperation { withExtendedLifetime(token) { _ = ran.add() } }
                }
            }
        }
        #expect(adders.wait(timeout: patience()) == .success)
        #expect(empties(queue))
        #expect(ran.value == 2 * perThread)
        // Each operation lets its closure go before the queue lets the operation go, so the
        // queue only empties once every token is released.
        #expect(released.value == 2 * perThread)
    }
}
