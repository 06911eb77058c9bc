import CQueueCore

/// How to run a work item on a queue later from a C callback that takes a queue, a context and
/// a function (`cq_work_item_notify_f`; `cq_after_work_item` and `cq_group_notify_work_item`
/// do the same for a timer and a group): a plain item runs in place on `queue` (one
/// `cq_retain`, no allocation); a barrier item hops through the default-priority global queue
/// and is then submitted to `queue` as a barrier. Exactly one call of `function(context)` must
/// follow. Not public API.
internal struct SQDeferredWorkItem {
    internal let queue: OpaquePointer
    internal let context: UnsafeMutableRawPointer
    internal let function: cq_function_t

    internal init(_ item: SQWorkItem, on queue: SQQueue) {
        if item.flags.contains(.barrier) {
            self.queue = cq_get_global_queue(0, 0)
            context = Unmanaged.passRetained(SQWorkItemSubmission(item: item, queue: queue))
                .toOpaque()
            function = sqSubmitWorkItem
        } else {
            cq_retain(sqObject(item.handle))
            self.queue = queue.handle
            context = sqObject(item.handle)
            function = sqPerformRetainedWorkItem
        }
    }
}
