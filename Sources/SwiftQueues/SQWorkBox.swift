import CQueueCore

/// The heap box that carries one submitted closure through the C core.
///
/// `SQQueue.async` and `SQGroup.notify` allocate exactly one of these per submission and pass it
/// to the C core as an opaque, retained context (`Unmanaged.passRetained(box).toOpaque()`);
/// ``sqRunWorkBox`` takes that retained reference back and calls the closure. An ``SQWorkItem``
/// instead keeps one box for the life of its C item: `sqCallWorkItemBox` calls the closure
/// without consuming it, and the item's finalizer releases it. Not public API.
@usableFromInline
internal final class SQWorkBox {
    @usableFromInline
    internal let work: @Sendable () -> Void

    @inlinable
    internal init(_ work: @escaping @Sendable () -> Void) {
        self.work = work
    }

    /// The box as a retained opaque pointer, for the `context` argument of a `cq_*_f` call.
    /// Exactly one call of ``sqRunWorkBox`` must consume it.
    @inlinable
    internal static func retainedContext(
        _ work: @escaping @Sendable () -> Void
    ) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(SQWorkBox(work)).toOpaque()
    }
}

/// The C trampoline for ``SQWorkBox`` contexts: consumes the box's retained reference (the box is
/// freed when the closure returns) and calls the closure.
@usableFromInline
internal let sqRunWorkBox: cq_function_t = { context in
    // safety: `context` is the `retainedContext` of a box submitted exactly once; the C core
    // calls each submitted function exactly once, so this balances that retain.
    Unmanaged<SQWorkBox>.fromOpaque(context!).takeRetainedValue().work()
}
