import CQueueCore

/// The heap box that carries one submitted closure through the C core.
///
/// `SQQueue.async` and `SQGroup.notify` allocate exactly one of these per submission and pass it
/// to the C core as an opaque, retained context (`Unmanaged.passRetained(box).toOpaque()`);
/// ``sqRunWorkBox`` takes that retained reference back and calls the closure. (An
/// ``SQWorkItem`` needs no box: its closure lives inside its C item.) Not public API.
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

/// Submits `work` to the C queue `queue` (in `group`, entered now and left after `work`, if not
/// nil; as a barrier if `barrier`) with the closure itself stored in the C task's inline
/// bytes (`cq_swift_async_prepare`/`cq_swift_async_submit`): no box, no allocation beyond the
/// closure's own context. A closure is two words (function and context), which fit in
/// `CQ_SWIFT_INLINE_BYTES`; ``sqRunInline`` moves it out and calls it.
@inlinable
internal func sqSubmitInline(
    _ queue: OpaquePointer, group: OpaquePointer?, _ work: @escaping @Sendable () -> Void,
    barrier: Bool
) {
    // safety: prepare returns CQ_SWIFT_INLINE_BYTES (16) 8-aligned uninitialised bytes, and a
    // closure is 16 bytes with 8-byte alignment (checked by InlineSubmissionTests); initialising
    // takes a +1 reference on the closure's context, which sqRunInline's move gives back.
    let bytes = cq_swift_async_prepare(queue, group, sqRunInline).unsafelyUnwrapped
    bytes.initializeMemory(as: SQInlineClosure.self, to: SQInlineClosure(work))
    cq_swift_async_submit(queue, bytes, barrier)
}

/// The C trampoline of ``sqSubmitInline(_:group:_:barrier:)``: `context` points to a copy of the task's
/// inline bytes, which hold the closure (moved out, so its context is released after it ran).
@usableFromInline
internal let sqRunInline: cq_function_t = { context in
    // safety: the C core passes the bytes sqSubmitInline initialised with one closure, copied
    // bitwise (closures are bitwise-movable), exactly once.
    context.unsafelyUnwrapped.bindMemory(to: SQInlineClosure.self, capacity: 1).move().run()
}

/// A closure as it is stored in C memory (a task's or a work item's inline bytes).
///
/// Wrapped in a struct so that it is kept as the closure it is: a function value stored
/// directly as a generic `T` (`initializeMemory(as: (() -> Void).self, ...)`, `pointee`) is
/// converted to the most general calling convention, which allocates a thunk context per
/// closure; a struct field of function type keeps its own. Two words, 8-byte aligned (checked by
/// InlineSubmissionTests against CQ_SWIFT_INLINE_BYTES).
@usableFromInline
@frozen
internal struct SQInlineClosure {
    @usableFromInline
    internal let work: @Sendable () -> Void

    @inlinable
    internal init(_ work: @escaping @Sendable () -> Void) {
        self.work = work
    }

    /// Calls the closure and releases it: consuming, so the call borrows the context this
    /// value owns instead of retaining it for the call.
    @inlinable
    internal consuming func run() {
        work()
    }
}

/// Converts a C queue, group or semaphore handle to the `void *` the generic object calls take.
@inlinable
internal func sqObject(_ handle: OpaquePointer) -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(handle)
}
