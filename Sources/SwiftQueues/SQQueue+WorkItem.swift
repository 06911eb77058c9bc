import CQueueCore

extension SQQueue {
    /// Submits `workItem` to run on this queue and returns at once; as a barrier if it was made
    /// with ``SQWorkItemFlags/barrier``. The submission holds a reference to the item until its
    /// run is over. If the item is cancelled before the run starts, the run returns at once.
    ///
    /// No allocation beyond the C core's task. Thread-safe; never blocks.
    /// Dispatch: `DispatchQueue.async(execute:)` with a `DispatchWorkItem`.
    public func async(execute workItem: SQWorkItem) {
        cq_async_work_item(handle, workItem.handle)
    }

    /// As ``async(execute:)``, and `group` counts the item until its run (or skip, if it was
    /// cancelled) is over.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.async(group:execute:)` with a
    /// `DispatchWorkItem`.
    public func async(group: SQGroup, execute workItem: SQWorkItem) {
        cq_group_async_work_item(group.handle, handle, workItem.handle)
    }

    /// Runs `workItem` on this queue and returns after it has run (at once if it was
    /// cancelled); as a barrier if it was made with ``SQWorkItemFlags/barrier``.
    ///
    /// Blocks, as ``sync(flags:execute:)`` does, with the same deadlock detection.
    /// Dispatch: `DispatchQueue.sync(execute:)` with a `DispatchWorkItem`.
    public func sync(execute workItem: SQWorkItem) {
        cq_sync_work_item(handle, workItem.handle)
    }
}
