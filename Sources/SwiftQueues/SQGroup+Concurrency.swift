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
    /// Cost: when the group is busy, one allocation and one `cq_group_notify_f` (the notify
    /// runs on a serial queue of the library's and resumes the task). A cancelled wait's notify
    /// is dropped later, with others, by a later cancelled wait: a group that never empties
    /// keeps fewer registrations than half its live waiters plus 64, each cancellation costing
    /// O(1) amortized.
    /// Thread-safe. Dispatch: none (`group.notify` with a continuation).
    public func waitUntilEmpty() async throws(CancellationError) {
        if cq_group_wait(handle, 0) == 0 {  // CQ_TIME_NOW: only checks
            return
        }
        let resumption = SQNotifyResumption()
        var registered = false
        let notified: Void? = await resumption.wait {
            registered = true
            cq_group_notify_f(
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

    /// A cancelled wait left its notify registered (see ``SQAbandonedWaits``).
    private func noteAbandonedWait() {
        abandonedWaits.note {
            cq_swift_group_notify_purge(
                handle, sqFireCallback, SQAbandonedWaits.isAbandoned, SQAbandonedWaits.release)
        }
    }

    /// The notifies registered now (tests).
    internal var registeredNotifyCount: Int {
        cq_swift_group_notify_purge(handle, sqFireCallback, { _ in false }, { _ in })
    }
}
