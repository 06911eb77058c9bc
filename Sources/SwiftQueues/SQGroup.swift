import CQueueCore
import Synchronization

/// A count of outstanding work that can be waited for, or that notifies a queue when it drops
/// to zero: SwiftQueues' `DispatchGroup`.
///
/// Work joins a group with ``SQQueue/async(group:qos:flags:execute:)`` or by hand with ``enter()``
/// and ``leave()``. Groups are reusable: once empty they can be entered again.
///
/// Thread-safety: every method may be called from any thread. A ``leave()`` has release
/// ordering and a ``wait()`` that sees the group empty has acquire ordering with every leave, so
/// the waiter sees everything the group's work did. The wrapper owns one reference to the
/// `cq_group_t`; work still counted by the group keeps the C group alive.
///
/// Porting from Dispatch: `DispatchGroup` → `SQGroup`; the method names are the same.
public final class SQGroup: @unchecked Sendable {
    @usableFromInline
    internal let handle: OpaquePointer

    /// Cancelled `waitUntilEmpty()` calls whose notifies are still registered.
    internal let abandonedWaits = SQAbandonedWaits()

    /// Creates an empty group. Stops the process if memory is exhausted.
    ///
    /// Dispatch: `DispatchGroup()`.
    public init() {
        guard let created = cq_group_create() else {
            fatalError("SQGroup(): cq_group_create failed (out of memory)")
        }
        handle = created
    }

    deinit {
        cq_release(sqObject(handle))
    }

    /// Counts one more piece of outstanding work. Balance it with exactly one ``leave()``.
    ///
    /// One atomic operation; thread-safe; never blocks. Dispatch: `DispatchGroup.enter()`.
    @inlinable
    public func enter() {
        cq_group_enter(handle)
    }

    /// Marks one piece of work entered with ``enter()`` as done. The leave that empties the
    /// group wakes the waiters and schedules the notify closures. A leave without a matching
    /// enter aborts the process with a message.
    ///
    /// One atomic operation when nobody waits; thread-safe; never blocks.
    /// Dispatch: `DispatchGroup.leave()`.
    @inlinable
    public func leave() {
        cq_group_leave(handle)
    }

    /// Waits until the group is empty; returns at once if it is empty now.
    ///
    /// Blocks. A pool worker that waits first runs the group's own queued work, then hands its
    /// CPU to a spare thread, so waiting inside work items never starves the pool.
    /// Dispatch: `DispatchGroup.wait()`.
    public func wait() {
        _ = cq_group_wait(handle, SQTime.distantFuture.rawValue)
    }

    /// Waits until the group is empty or `timeout` passes.
    ///
    /// Returns ``SQTimeoutResult/success`` if the group was (or became) empty,
    /// ``SQTimeoutResult/timedOut`` otherwise. Blocks at most until `timeout`; with a time that
    /// has passed it only checks. Dispatch: `DispatchGroup.wait(timeout:)`.
    public func wait(timeout: SQTime) -> SQTimeoutResult {
        cq_group_wait(handle, timeout.rawValue) == 0 ? .success : .timedOut
    }

    /// Waits until the group is empty or the wall clock reaches `wallTimeout` (the wait follows
    /// changes of the wall clock). Returns as ``wait(timeout:)`` does.
    ///
    /// Blocks at most until `wallTimeout`. Dispatch: `DispatchGroup.wait(wallTimeout:)`.
    public func wait(wallTimeout: SQWallTime) -> SQTimeoutResult {
        cq_group_wait(handle, wallTimeout.rawValue) == 0 ? .success : .timedOut
    }

    /// Submits `work` to `queue` once the group is empty: at once if it is empty now. Closures
    /// registered while the group is busy run, in registration order, when it next becomes
    /// empty. The group keeps `queue` alive until then.
    ///
    /// - Parameters:
    ///   - qos: accepted and ignored (the work runs at `queue`'s priority, see ``SQQoS``).
    ///   - flags: with ``SQWorkItemFlags/barrier`` the closure runs as a barrier on `queue`
    ///     (through a work item, which the leave that empties the group queues as a barrier);
    ///     the other flags are accepted and ignored.
    ///   - queue: where `work` runs.
    ///   - work: the closure to run once the group is empty.
    ///
    /// One allocation for the closure; thread-safe; never blocks.
    /// Dispatch: `DispatchGroup.notify(qos:flags:queue:execute:)`.
    // Disfavoured: for `.main` the overload taking a `@MainActor` closure is chosen
    // (SQMainQueue+Notify.swift), as the closure's isolation cannot pick it.
    @_disfavoredOverload
    public func notify(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        queue: SQQueue,
        execute work: @escaping @Sendable () -> Void
    ) {
        if flags.contains(.barrier) {
            notify(queue: queue, work: SQWorkItem(qos: qos, flags: flags, block: work))
        } else {
            cq_group_notify_f(handle, queue.handle, SQWorkBox.retainedContext(work), sqRunWorkBox)
        }
    }
}
