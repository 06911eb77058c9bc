import CQueueCore

/// A work item on its way to a queue through a hop (the C core has no barrier form of
/// `cq_after_f` or of the notify calls): the hop runs ``sqSubmitWorkItem`` on a global queue,
/// which submits the item to `queue` with `cq_async_work_item` (honouring its barrier flag).
/// Keeps both alive until then. Not public API.
internal final class SQWorkItemSubmission {
    internal let item: SQWorkItem
    internal let queue: SQQueue

    internal init(item: SQWorkItem, queue: SQQueue) {
        self.item = item
        self.queue = queue
    }
}

/// The C trampoline for ``SQWorkItemSubmission`` contexts: consumes the box and submits its
/// item.
internal let sqSubmitWorkItem: cq_function_t = { context in
    // safety: `context` is a box passed retained to exactly one C call that runs its function
    // once; this balances that retain.
    let submission = Unmanaged<SQWorkItemSubmission>.fromOpaque(context!).takeRetainedValue()
    cq_async_work_item(submission.queue.handle, submission.item.handle)
}

/// The C trampoline that runs a work item in place and drops a reference to it: `context` is a
/// `cq_work_item_t` retained (`cq_retain`) for this one call.
internal let sqPerformRetainedWorkItem: cq_function_t = { context in
    // safety: the caller took a reference for this call, and the C core calls it once.
    let item = OpaquePointer(context!)
    cq_work_item_perform(item)
    cq_release(context)
}
