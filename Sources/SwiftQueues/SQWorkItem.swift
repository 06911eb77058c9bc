import CQueueCore

/// A closure as an object that can be submitted, performed, waited for, observed and
/// cancelled: SwiftQueues' `DispatchWorkItem`, over the C core's `cq_work_item_t`.
///
/// Submit it with ``SQQueue/async(execute:)``, ``SQQueue/sync(execute:)-(SQWorkItem)``,
/// ``SQQueue/async(group:execute:)``, ``SQQueue/asyncAfter(deadline:execute:)``, hand it to
/// ``SQGroup/notify(queue:work:)`` or ``notify(queue:execute:)``, or run it in place with
/// ``perform()``. It may be submitted and performed any number of times; each run happens as
/// a plain closure submitted the same way would (a ``SQWorkItemFlags/barrier`` item runs as a
/// barrier).
///
/// The item *finishes* once its first run has returned, or when it is cancelled before any
/// run started. Then, exactly once, ``wait()`` returns and the ``notify(queue:execute:)``
/// work is submitted. After ``cancel()`` no run starts: submissions still queued return at
/// once without calling the closure; a run already under way is not interrupted.
///
/// Thread-safety: every method may be called from any thread. Everything the first run did
/// happens-before a ``wait()`` that returns and before the notified work starts. The wrapper
/// owns one reference to the C item, and each submission holds another until its run is over,
/// so an item may be dropped right after submitting it. The closure lives inside the C item and
/// is released when the C item is freed, on the thread that dropped its last reference.
///
/// Porting from Dispatch: `DispatchWorkItem` → `SQWorkItem`; the method names and labels are
/// the same.
public final class SQWorkItem: @unchecked Sendable {
    /// The C item. Immutable; the C core is thread-safe.
    @usableFromInline
    internal let handle: OpaquePointer

    /// The flags given at creation (submissions read ``SQWorkItemFlags/barrier``).
    @usableFromInline
    internal let flags: SQWorkItemFlags

    /// Cancelled ``waitUntilFinished()`` calls whose notify is still registered.
    internal let abandonedWaits = SQAbandonedWaits()

    /// Creates a work item that runs `block`.
    ///
    /// - Parameters:
    ///   - qos: accepted and ignored: the item runs at the priority of the queue it is
    ///     submitted to (see ``SQQoS``).
    ///   - flags: ``SQWorkItemFlags/barrier`` makes every submission of it to a concurrent
    ///     queue a barrier; the other flags are accepted and ignored.
    ///   - block: the work; it is kept until the item is freed.
    ///
    /// One allocation for the C item, which holds the closure. Thread-safe; never blocks.
    /// Stops the process, with a message, for flags that are none of ``SQWorkItemFlags``'
    /// (a raw value the C core does not know) or if memory is exhausted.
    /// Dispatch: `DispatchWorkItem(qos:flags:block:)`.
    public init(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        block: @escaping @Sendable () -> Void
    ) {
        let unknown = flags.subtracting(SQWorkItemFlags.known)
        sqRequire(
            unknown.isEmpty,
            "SQWorkItem(flags:): unknown flags 0x\(String(unknown.rawValue, radix: 16))")
        var bytes: UnsafeMutableRawPointer?
        guard
            let created = cq_swift_work_item_create(
                flags.rawValue, sqCallWorkItemClosure, sqDestroyWorkItemClosure, &bytes)
        else {
            fatalError("SQWorkItem(flags:): cq_swift_work_item_create failed (out of memory)")
        }
        // safety: the C item's inline bytes are CQ_SWIFT_INLINE_BYTES (16), 8-aligned and
        // uninitialised, and a closure is 16 bytes with 8-byte alignment (checked by
        // InlineSubmissionTests); the item is not shared yet. The item owns the closure from here on:
        // sqDestroyWorkItemClosure deinitialises it when the item is freed.
        bytes.unsafelyUnwrapped.initializeMemory(as: SQInlineClosure.self, to: SQInlineClosure(block))
        handle = created
        self.flags = flags
    }

    deinit {
        cq_release(sqObject(handle))
    }

    /// Runs the closure on the calling thread, now, unless the item was cancelled (then it
    /// returns at once). The first run finishes the item.
    ///
    /// Blocks for the closure's run. Dispatch: `DispatchWorkItem.perform()`.
    public func perform() {
        cq_work_item_perform(handle)
    }

    /// Waits until the item has finished: its first run has returned, or it was cancelled
    /// before any run started. Returns at once if it has.
    ///
    /// Blocks (a pool worker that waits hands its CPU to a spare thread). Waiting for an item
    /// from inside its own run waits for ever. Dispatch: `DispatchWorkItem.wait()`.
    public func wait() {
        _ = cq_work_item_wait(handle, SQTime.distantFuture.rawValue)
    }

    /// Waits until the item has finished or `timeout` passes. Returns
    /// ``SQTimeoutResult/success`` once finished, ``SQTimeoutResult/timedOut`` otherwise.
    ///
    /// Blocks at most until `timeout`. Dispatch: `DispatchWorkItem.wait(timeout:)`.
    public func wait(timeout: SQTime) -> SQTimeoutResult {
        cq_work_item_wait(handle, timeout.rawValue) == 0 ? .success : .timedOut
    }

    /// As ``wait(timeout:)``, with a wall-clock deadline. Blocks at most until `wallTimeout`.
    /// Dispatch: `DispatchWorkItem.wait(wallTimeout:)`.
    public func wait(wallTimeout: SQWallTime) -> SQTimeoutResult {
        cq_work_item_wait(handle, wallTimeout.rawValue) == 0 ? .success : .timedOut
    }

    /// Cancels the item: no run starts after this, and submissions still queued return at once
    /// without calling the closure. A run already under way is not interrupted (check
    /// ``isCancelled`` inside it to stop early); the item finishes when it returns. If no run
    /// had started, the item finishes now: waiters return and the notified work is submitted.
    ///
    /// Idempotent; thread-safe; never blocks. Dispatch: `DispatchWorkItem.cancel()`.
    public func cancel() {
        cq_work_item_cancel(handle)
    }

    /// Whether ``cancel()`` has been called (acquire ordering with it).
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchWorkItem.isCancelled`.
    public var isCancelled: Bool {
        cq_work_item_testcancel(handle) != 0
    }
}

/// The C function of every ``SQWorkItem``: calls the closure in the item's inline bytes, which
/// the item keeps (it is not consumed: an item can run more than once).
internal let sqCallWorkItemClosure: cq_function_t = { bytes in
    // safety: `bytes` are the item's inline bytes, initialised with one closure in
    // SQWorkItem.init and deinitialised only when the item is freed, after the last run (every
    // run holds a reference).
    bytes.unsafelyUnwrapped.assumingMemoryBound(to: SQInlineClosure.self).pointee.work()
}

/// The destroy function of every ``SQWorkItem``'s C item: releases the closure.
internal let sqDestroyWorkItemClosure: cq_function_t = { bytes in
    // safety: the C core calls it once, when the item is freed, with the bytes SQWorkItem.init
    // initialised.
    bytes.unsafelyUnwrapped.assumingMemoryBound(to: SQInlineClosure.self).deinitialize(count: 1)
}
