import CQueueCore

extension SQGroup {
    /// Submits the work item `work` to `queue` once the group is empty (at once if it is empty
    /// now), as ``SQQueue/async(execute:)`` would (a barrier item runs as a barrier). A
    /// cancelled item does not run. Otherwise as ``notify(qos:flags:queue:execute:)-(_,_,SQQueue,_)``.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchGroup.notify(queue:work:)`.
    public func notify(queue: SQQueue, work: SQWorkItem) {
        cq_group_notify_work_item(handle, queue.handle, work.handle)
    }
}
