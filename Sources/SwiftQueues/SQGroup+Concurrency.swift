import CQueueCore

extension SQGroup {
    /// Suspends the calling task until the group is empty, without blocking a thread: the async
    /// counterpart of ``wait()``. Returns at once if the group is empty now.
    ///
    /// As with ``wait()``, a waiter that returns sees everything the group's work did.
    ///
    /// Cancellation: a cancelled task stops waiting at once and this throws
    /// `CancellationError`; the group's work goes on (cancel it yourself if it should stop).
    ///
    /// Cost: when the group is busy, one allocation and one `cq_group_notify_f` (the notify runs
    /// on a global queue and resumes the task); a cancelled wait's notify stays registered until
    /// the group next empties. Thread-safe. Dispatch: none (`group.notify` with a continuation).
    public func waitUntilEmpty() async throws(CancellationError) {
        if cq_group_wait(handle, 0) == 0 {  // CQ_TIME_NOW: only checks
            return
        }
        let resumption = SQNotifyResumption()
        let notified: Void? = await resumption.wait {
            cq_group_notify_f(
                handle, SQQueue.globalDefault.handle, resumption.retainedContext(),
                sqFireCallback)
        }
        if notified == nil {
            throw CancellationError()
        }
    }
}
