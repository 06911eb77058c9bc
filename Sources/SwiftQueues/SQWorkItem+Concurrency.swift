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
    /// cancelled wait's notification is dropped later, with others, by a later cancelled wait,
    /// as a cancelled ``SQGroup/waitUntilEmpty()``'s is: an item that runs late (or never)
    /// keeps fewer registrations than half its live waiters plus 64.
    ///
    /// Cost: when the item has not finished yet, one allocation and one `cq_work_item_notify_f`.
    /// Thread-safe. Dispatch: none (`item.notify` with a continuation).
    public func waitUntilFinished() async throws(CancellationError) {
        if cq_work_item_wait(handle, 0) == 0 {  // CQ_TIME_NOW: only checks
            return
        }
        let resumption = SQNotifyResumption()
        var registered = false
        let notified: Void? = await resumption.wait {
            registered = true
            cq_work_item_notify_f(
                handle, SQQueue.resumptions.handle, resumption.retainedContext(),
                sqFireCallback)
        }
        if notified == nil {
            if registered {
                noteAbandonedWait()
            }
            throw CancellationError()
        }
    }

    /// A cancelled wait left its notify registered (it stayed until the item ran: ~90 bytes
    /// per cancelled wait, without bound, for an item that runs late or never; see
    /// ``SQAbandonedWaits``).
    private func noteAbandonedWait() {
        abandonedWaits.note {
            cq_swift_work_item_notify_purge(
                handle, sqFireCallback, SQAbandonedWaits.isAbandoned, SQAbandonedWaits.release)
        }
    }

    /// The notifies registered now (tests).
    internal var registeredNotifyCount: Int {
        cq_swift_work_item_notify_purge(handle, sqFireCallback, { _ in false }, { _ in })
    }
}
