import CQueueCore

extension SQWorkItem {
    /// Submits `execute` to `queue` once this item has finished (its first run returned, or it
    /// was cancelled before any run): at once if it has. Every registered closure runs once.
    ///
    /// - Parameters:
    ///   - qos: accepted and ignored (the work runs at `queue`'s priority, see ``SQQoS``).
    ///   - flags: with ``SQWorkItemFlags/barrier`` the closure runs as a barrier on `queue`;
    ///     the other flags are accepted and ignored.
    ///   - queue: where `execute` runs.
    ///   - execute: the closure to run once this item has finished.
    ///
    /// One allocation for the closure (a second one for a barrier, which the thread that
    /// finishes this item queues as a barrier). Thread-safe; never blocks.
    /// Dispatch: `DispatchWorkItem.notify(qos:flags:queue:execute:)`.
    // Disfavoured: for `.main` the overload taking a `@MainActor` closure is chosen
    // (SQMainQueue+Notify.swift), as the closure's isolation cannot pick it.
    @_disfavoredOverload
    public func notify(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        queue: SQQueue,
        execute: @escaping @Sendable () -> Void
    ) {
        if flags.contains(.barrier) {
            notify(queue: queue, execute: SQWorkItem(qos: qos, flags: flags, block: execute))
        } else {
            cq_work_item_notify_f(
                handle, queue.handle, SQWorkBox.retainedContext(execute), sqRunWorkBox)
        }
    }

    /// Submits the work item `execute` to `queue` once this item has finished (at once if it
    /// has), as ``SQQueue/async(execute:)`` would (a barrier item runs as a barrier). A
    /// cancelled `execute` does not run.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchWorkItem.notify(queue:execute:)`.
    public func notify(queue: SQQueue, execute: SQWorkItem) {
        cq_work_item_notify_work_item(handle, queue.handle, execute.handle)
    }
}
