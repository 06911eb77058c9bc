#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
@testable import SwiftQueues
import Testing

/// The asynchronous base class many apps have: the guide's own executing and finished state,
/// and a `cancel()` that moves the operation to finished at once (a cancelled operation then
/// never waits for a slot to finish). Its work (none here) is done as soon as it starts.
final class FinishOnCancelOperation: SQOperation, @unchecked Sendable {
    private let lock = Locked<(executing: Bool, finished: Bool)>((false, false))

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { $0.executing } }
    override var isFinished: Bool { lock.withLock { $0.finished } }

    override func start() {
        finish()
    }

    override func cancel() {
        super.cancel()
        finish()
    }

    /// Moves to finished (once), with the guide's notifications.
    func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        let first = lock.withLock { state in
            defer { state = (false, true) }
            return !state.finished
        }
        if first {
            didChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isFinished")
        }
    }
}

/// Holds a thread where it stands and lets it go again: a signal whose handler waits on a
/// semaphore. The handler touches only these two semaphores (`sem_post` and `sem_wait` are
/// async-signal-safe), created before it is installed.
private enum ThreadPause {
    nonisolated(unsafe) static let paused = makeSemaphore()
    nonisolated(unsafe) static let resumed = makeSemaphore()
    /// A real-time signal nothing else in the tests uses (the signal-source tests use
    /// SIGUSR1 and SIGUSR2).
    static let signal = __libc_current_sigrtmax() - 3

    /// Installed once and left installed: a signal delivered late (after a test stopped
    /// waiting for it) must find the handler, not the default action, which ends the process.
    static let installed: Bool = {
        _ = (paused, resumed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            let saved = errno
            sem_post(ThreadPause.paused)
            while sem_wait(ThreadPause.resumed) != 0 {}
            errno = saved
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        return sigaction(signal, &action, nil) == 0
    }()

    private static func makeSemaphore() -> UnsafeMutablePointer<sem_t> {
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        return semaphore
    }

    /// Stops `thread` (which must not block the signal); true once it waits in the handler.
    /// Call ``resume()`` once after each call, whatever it returned.
    static func pause(_ thread: pthread_t, until deadline: SQTime) -> Bool {
        // A handler that ran late after an earlier attempt left a post behind.
        while sem_trywait(paused) == 0 {}
        guard installed, pthread_kill(thread, signal) == 0 else { return false }
        while sem_trywait(paused) != 0 {
            if SQTime.now() > deadline {
                return false
            }
            sched_yield()
        }
        return true
    }

    static func resume() {
        sem_post(resumed)
    }
}

/// Runs `body` on a new thread of its own (not a pool thread: it is stopped for a while).
private func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
    final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
    guard status == 0 else {
        Unmanaged<Body>.fromOpaque(context).release()
        return nil
    }
    return thread
}

/// `queue.waitUntilAllOperationsAreFinished()` returns before `deadline`.
private func empties(_ queue: SQOperationQueue, by deadline: SQTime) -> Bool {
    let done = SQSemaphore(value: 0)
    SQQueue.global().async {
        queue.waitUntilAllOperationsAreFinished()
        done.signal()
    }
    return done.wait(timeout: deadline) == .success
}

/// An operation finished by another thread while `addOperation` is adding it: the add claims
/// the operation (under its lock), then links it into the queue (under the queue lock), and a
/// cancel or a finish in between used to reach the queue before the link. The queue ignored
/// that finish (the operation was not linked yet), then linked the finished operation, gave it
/// a slot and submitted it; the start path saw it finished and returned, so the operation
/// stayed in `operations` for ever, `operationCount` never reached 0,
/// `waitUntilAllOperationsAreFinished()` hung, and the slot was never given back (with
/// `maxConcurrentOperationCount` 1, nothing ran again). Found by a probe (an app's "finish at
/// once when cancelled" base class, cancelled from another thread during the add), 10 of 16
/// runs; Foundation returns normally.
///
/// The window is a few instructions of library code with no user code in it, so the test
/// makes it wide: it takes the queue lock itself, lets the adding thread claim the operation
/// and run into that lock, stops the thread there with a signal, gives the lock back, then
/// cancels or finishes the operation, and only then lets the adding thread go on. The
/// interleaving is the defect's, every run.
@Suite(
    .serialized,
    .disabled(
        if: underThreadSanitizer,
        "TSan delivers the signal only once the thread leaves the lock it waits for")
) struct OperationFinishWhileAddingTests {
    enum Finish: String, Sendable, CaseIterable {
        /// `cancel()`, which the override turns into a finish: the queue is told the
        /// operation became ready, then that it finished.
        case cancel
        /// The guide's notifications alone (`didChangeValue(forKey: "isFinished")`).
        case finish
    }

    private let patience: Duration = .seconds(30)

    /// Adds `operation` to `queue` on a thread of its own and runs `finish` on this thread
    /// while that thread has claimed the operation and not yet linked it. True if it went
    /// that way and the add then returned (before `deadline`).
    private func finishWhileAdding(
        _ operation: FinishOnCancelOperation, to queue: SQOperationQueue, until deadline: SQTime,
        finish: () -> Void
    ) -> Bool {
        let added = SQSemaphore(value: 0)
        var adder: pthread_t?
        var signalled = false
        let paused: Bool = queue.state.withLock { _ in
            // The adding thread cannot link the operation while this holds the queue lock.
            adder = startThread {
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, ThreadPause.signal)
                pthread_sigmask(SIG_UNBLOCK, &signals, nil)
                queue.addOperation(operation)
                added.signal()
            }
            guard let adder else { return false }
            // Claimed: the operation's lock names the queue (the queue lock may be held while
            // the operation lock is taken).
            while operation.state.withLock({ $0.queue == nil }) {
                if SQTime.now() > deadline {
                    return false
                }
                sched_yield()
            }
            signalled = true
            return ThreadPause.pause(adder, until: deadline)
        }
        if paused {
            finish()
        }
        if signalled {
            ThreadPause.resume()
        }
        guard let adder else { return false }
        let returned = added.wait(timeout: deadline) == .success
        if returned {
            pthread_join(adder, nil)
        } else {
            pthread_detach(adder)
        }
        return paused && returned
    }

    /// The stuck operation and the leaked slot, with a dependent and a completion block.
    @Test(arguments: Finish.allCases)
    func testOperationFinishedWhileBeingAddedLeavesTheQueue(_ how: Finish) {
        let deadline = SQTime.now() + patience
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let operation = FinishOnCancelOperation()
        let completions = Counter()
        operation.completionBlock = { completions.add() }
        let later = SQBlockOperation {}
        let added = Counter()
        let finished = Counter()
        let laterReported = SQSemaphore(value: 0)
        let observation = queue.observeStateChanges { change in
            switch change {
            case .added(let changed) where changed === operation: added.add()
            case .finished(let changed) where changed === operation: finished.add()
            case .finished(let changed) where changed === later: laterReported.signal()
            default: break
            }
        }
        let dependentRan = SQSemaphore(value: 0)
        let dependent = SQBlockOperation { dependentRan.signal() }
        dependent.addDependency(operation)
        queue.addOperation(dependent)

        let raced = finishWhileAdding(operation, to: queue, until: deadline) {
            switch how {
            case .cancel: operation.cancel()
            case .finish: operation.finish()
            }
        }
        #expect(raced, "the add was not held between its claim and its link")
        #expect(operation.isFinished && operation.hasFinished)
        #expect(dependentRan.wait(timeout: deadline) == .success)
        // One slot: this runs only if the finished operation gave its slot back (or never
        // took one).
        let laterRan = SQSemaphore(value: 0)
        later.completionBlock = { laterRan.signal() }
        queue.addOperation(later)
        #expect(laterRan.wait(timeout: deadline) == .success, "the slot was never given back")
        #expect(empties(queue, by: deadline), "waitUntilAllOperationsAreFinished() hung")
        #expect(!queue.operations.contains(operation), "finished, yet still in operations")
        #expect(queue.operationCount == 0)
        #expect(completions.value == 1)
        // Added and removed once, as any operation (the queue's changes are delivered in order:
        // `later` finished last).
        #expect(laterReported.wait(timeout: deadline) == .success)
        #expect(added.value == 1 && finished.value == 1)
        observation.invalidate()
    }

    /// The same race while a barrier is pending: the operation, added after the barrier, is
    /// counted and released by the barrier's bookkeeping like any other, and everything after
    /// the barrier still runs.
    @Test(arguments: Finish.allCases)
    func testOperationFinishedWhileBeingAddedBehindABarrier(_ how: Finish) {
        let deadline = SQTime.now() + patience
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        queue.addOperation { _ = release.wait(timeout: deadline) }
        let barrierRan = SQSemaphore(value: 0)
        queue.addBarrierBlock { barrierRan.signal() }
        let operation = FinishOnCancelOperation()

        let raced = finishWhileAdding(operation, to: queue, until: deadline) {
            switch how {
            case .cancel: operation.cancel()
            case .finish: operation.finish()
            }
        }
        #expect(raced, "the add was not held between its claim and its link")
        #expect(!queue.operations.contains(operation), "finished, yet still in operations")
        release.signal()
        #expect(barrierRan.wait(timeout: deadline) == .success)
        let laterRan = SQSemaphore(value: 0)
        queue.addOperation { laterRan.signal() }
        #expect(laterRan.wait(timeout: deadline) == .success, "the slot was never given back")
        #expect(empties(queue, by: deadline), "waitUntilAllOperationsAreFinished() hung")
        #expect(queue.operationCount == 0)
    }
}
