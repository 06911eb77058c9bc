import CQueueCore

/// A closure submitted as a barrier that also belongs to a group (the C core has no
/// `cq_group_barrier_async_f`): the group was entered at submission, and is left, and the
/// reference taken on it released, after the closure returns. Not public API.
internal final class SQGroupWorkBox {
    internal let work: @Sendable () -> Void
    internal let group: OpaquePointer

    internal init(_ work: @escaping @Sendable () -> Void, group: OpaquePointer) {
        self.work = work
        self.group = group
    }
}

/// The C trampoline for ``SQGroupWorkBox`` contexts.
internal let sqRunGroupWorkBox: cq_function_t = { context in
    // safety: as for sqRunWorkBox; the box holds one cq_retain on the group and one enter.
    let box = Unmanaged<SQGroupWorkBox>.fromOpaque(context!).takeRetainedValue()
    box.work()
    cq_group_leave(box.group)
    cq_release(UnsafeMutableRawPointer(box.group))
}
