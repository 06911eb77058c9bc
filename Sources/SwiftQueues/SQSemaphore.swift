import CQueueCore
import Synchronization

/// A counting semaphore: SwiftQueues' `DispatchSemaphore`.
///
/// ``wait()`` decrements the count and waits while it is negative; ``signal()`` increments it
/// and wakes one waiter. With a starting value of 0 it signals events between threads; with a
/// value N it limits concurrent access to N.
///
/// Thread-safety: every method may be called from any thread. A signal has release ordering and
/// the wait it satisfies acquire ordering. The wrapper owns one reference to the
/// `cq_semaphore_t`. Releasing (dropping the last wrapper reference to) a semaphore whose count
/// is below its starting value aborts the process, as libdispatch does.
///
/// Porting from Dispatch: `DispatchSemaphore` → `SQSemaphore`; the method names are the same.
public final class SQSemaphore: @unchecked Sendable {
    @usableFromInline
    internal let handle: OpaquePointer

    /// How many tasks wait in ``waitForSignal()`` (in ``asyncWaiters``), read by ``signal()``
    /// without the lock (SQSemaphore+Concurrency.swift has the protocol).
    @usableFromInline
    internal let asyncWaiterCount = Atomic<Int>(0)

    /// The tasks waiting in ``waitForSignal()``, first come first served.
    internal let asyncWaiters = SQLocked.make(SQSemaphoreWaitList())

    /// Creates a semaphore whose count starts at `value`, which must not be negative (the
    /// process stops otherwise, or if memory is exhausted).
    ///
    /// Dispatch: `DispatchSemaphore(value:)`.
    public init(value: Int) {
        sqRequire(value >= 0, "SQSemaphore(value: \(value)): the value must not be negative")
        guard let created = cq_semaphore_create(value) else {
            fatalError("SQSemaphore(value: \(value)): cq_semaphore_create failed (out of memory)")
        }
        handle = created
    }

    deinit {
        cq_release(sqObject(handle))
    }

    /// Increments the count, waking one waiter if there is one: a thread in ``wait()``, or a
    /// task in ``waitForSignal()`` (which then gets the resource). Returns non-zero if a waiter
    /// was woken, 0 otherwise.
    ///
    /// One atomic operation and a fence when nobody waits; thread-safe; never blocks.
    /// Dispatch: `DispatchSemaphore.signal()`.
    @inlinable
    @discardableResult
    public func signal() -> Int {
        // Tasks first, as waitForSignal() promises: a C signal hands its unit straight to a
        // thread sleeping in wait(), and the hand-off below then found nothing to take back,
        // so while a thread kept waiting the tasks were never served.
        if asyncWaiterCount.load(ordering: .relaxed) != 0 && handToFirstAsyncWaiter() {
            return 1
        }
        let woken = cq_semaphore_signal(handle)
        // seq_cst fence: pairs with the one in waitForSignal (a Dekker pair: either that
        // waiter's retry sees this increment, or this load sees the waiter listed).
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if asyncWaiterCount.load(ordering: .relaxed) != 0 {
            return handOffToAsyncWaiter(woken: woken)
        }
        return woken
    }

    /// Decrements the count, waiting as long as necessary for a ``signal()`` if it was not
    /// positive.
    ///
    /// Blocks (one atomic operation when a resource is available; a bounded spin, then a sleep;
    /// a pool worker that has to sleep hands its CPU to a spare thread first).
    /// Dispatch: `DispatchSemaphore.wait()`.
    @inlinable
    public func wait() {
        _ = cq_semaphore_wait(handle, SQTime.distantFuture.rawValue)
    }

    /// Decrements the count, waiting until a ``signal()`` or `timeout` if it was not positive.
    ///
    /// Returns ``SQTimeoutResult/success`` when it got the resource, ``SQTimeoutResult/timedOut``
    /// otherwise (the count is then restored). Blocks at most until `timeout`; with a time that
    /// has passed it only tries. Dispatch: `DispatchSemaphore.wait(timeout:)`.
    @inlinable
    public func wait(timeout: SQTime) -> SQTimeoutResult {
        cq_semaphore_wait(handle, timeout.rawValue) == 0 ? .success : .timedOut
    }

    /// As ``wait(timeout:)``, with a wall-clock deadline (the wait follows changes of the wall
    /// clock). Blocks at most until `wallTimeout`.
    /// Dispatch: `DispatchSemaphore.wait(wallTimeout:)`.
    public func wait(wallTimeout: SQWallTime) -> SQTimeoutResult {
        cq_semaphore_wait(handle, wallTimeout.rawValue) == 0 ? .success : .timedOut
    }
}
