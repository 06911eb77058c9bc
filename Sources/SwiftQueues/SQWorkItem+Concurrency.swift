import CQueueCore

extension SQWorkItem {
    /// Suspends the calling task until the work item has finished, without blocking a thread:
    /// the async counterpart of ``wait()`` (and of ``notify(queue:execute:)``). An item is
    /// finished once its first run has returned, or once it was cancelled before any run
    /// started. Like ``wait()``, waiting for an item that is never run nor cancelled waits
    /// forever (or until the task is cancelled). A waiter that returns sees everything the
    /// item's first run did.
    ///
    /// Cancellation: a cancelled task stops waiting at once and this throws
    /// `CancellationError`; the item is not cancelled (call ``cancel()`` for that). The
    /// cancelled wait's notification stays registered on the item (about 100 bytes) until the
    /// item finishes or is cancelled, as a cancelled ``SQGroup/waitUntilEmpty()``'s does.
    ///
    /// Cost: when the item has not finished yet, one allocation and one `cq_work_item_notify_f`.
    /// Thread-safe. Dispatch: none (`item.notify` with a continuation).
    public func waitUntilFinished() async throws(CancellationError) {
        if cq_work_item_wait(handle, 0) == 0 {  // CQ_TIME_NOW: only checks
            return
        }
        let resumption = SQNotifyResumption()
        let notified: Void? = await resumption.wait {
            cq_work_item_notify_f(
                handle, SQQueue.globalDefault.handle, resumption.retainedContext(),
                sqFireCallback)
        }
        if notified == nil {
            throw CancellationError()
        }
    }
}
