#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SwiftQueues
import Testing

/// An object whose deinit reports the thread it ran on.
private final class Released: @unchecked Sendable {
    let released = SQSemaphore(value: 0)
    let thread = Locked<pthread_t?>(nil)

    final class Token: @unchecked Sendable {
        let owner: Released
        init(_ owner: Released) { self.owner = owner }
        deinit {
            owner.thread.withLock { $0 = pthread_self() }
            owner.released.signal()
        }
    }

    /// Whether the token was released within the tests' patience, and not on `thread`.
    func releasedElsewhere(than adder: pthread_t) -> Bool {
        guard arrived(released) else { return false }
        return thread.withLock { $0.map { pthread_equal($0, adder) == 0 } ?? false }
    }
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
        #expect(watcher.releasedElsewhere(than: pthread_self()))
        unblock.signal()
        #expect(empties(queue))
    }

    /// User code attached to a finished, retired operation (here a dependency added after it
    /// finished) is released on the pool when the adding thread frees the operation.
    @Test func testAttachedUserCodeIsNotReleasedOnTheAddingThread() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let unblock = SQSemaphore(value: 0)
        let watcher = Released()
        do {
            let target = queueMadeOperation(queue)
            queue.addOperation { _ = unblock.wait(timeout: patience()) }  // keeps it busy
            queue.isSuspended = false
            #expect(completes { target.waitUntilFinished() })
            target.addDependency(TokenOperation(Released.Token(watcher)))
        }
        // This thread adds: it frees the retired target, whose dependency (and so the
        // token) must be released elsewhere.
        for _ in 0..<4 {
            queue.addOperation {}
        }
        #expect(watcher.releasedElsewhere(than: pthread_self()))
        unblock.signal()
        #expect(empties(queue))
    }

    /// A queue that empties frees its retired operations itself: none waits for an addition
    /// that may never come.
    @Test func testRetiredOperationsAreFreedWhenTheQueueEmpties() {
        let queue = SQOperationQueue()
        queue.isSuspended = true
        let unblock = SQSemaphore(value: 0)
        let watcher = Released()
        do {
            let target = queueMadeOperation(queue)
            queue.addOperation { _ = unblock.wait(timeout: patience()) }
            queue.isSuspended = false
            #expect(completes { target.waitUntilFinished() })
            target.addDependency(TokenOperation(Released.Token(watcher)))
        }
        unblock.signal()  // the queue empties; nobody adds again
        #expect(watcher.releasedElsewhere(than: pthread_self()))
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
