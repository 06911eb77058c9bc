import CQueueCore

/// The body of a `concurrentPerform` call, on the caller's stack. A struct field keeps the
/// closure at its natural abstraction: stored through a generic pointer instead, every call
/// went through a reabstraction thunk.
@usableFromInline
internal struct SQPerformBody {
    @usableFromInline
    internal let work: @Sendable (Int) -> Void

    @inlinable
    internal init(work: @escaping @Sendable (Int) -> Void) {
        self.work = work
    }
}

/// The C trampoline for `concurrentPerform`: `context` points to an ``SQPerformBody`` on the
/// caller's stack, which the C core calls from several threads at once (read-only), once per
/// chunk of iterations: the closure is loaded (retained) once per chunk and called in a plain
/// loop, not reloaded per iteration.
@usableFromInline
internal let sqRunStackRange: cq_apply_range_function_t = { context, start, end in
    // safety: the caller keeps the body alive and unmoved until cq_apply_ranges_f returns,
    // which is after every chunk has returned; the body is only read.
    let work = context.unsafelyUnwrapped.assumingMemoryBound(to: SQPerformBody.self).pointee.work
    for i in start..<end {
        work(i)
    }
}

extension SQQueue {
    /// Calls `work(i)` for every `i` in `0 ..< iterations`, in parallel on the default-priority
    /// global queue, and returns when every call has returned.
    ///
    /// The calling thread takes part; the range is split into chunks that idle workers take.
    /// Nested calls, and calls from inside work items, complete even when every worker is busy.
    /// The closure runs on several threads at once and does not escape. As in Dispatch, it is
    /// `@Sendable`: in the Swift 6 language mode the compiler rejects a closure that writes an
    /// actor's state or captures a non-`Sendable` value. Writing each iteration's own element
    /// through a buffer pointer takes the same shape as with Dispatch: name the buffer of
    /// `withUnsafeMutableBufferPointer` with `nonisolated(unsafe) let` and capture that.
    ///
    /// Blocks until all iterations have run. Thread-safe. The closure stays on the caller's
    /// stack (at most one small allocation, for `withoutActuallyEscaping`).
    /// Dispatch: `DispatchQueue.concurrentPerform(iterations:execute:)`.
    @inlinable
    public static func concurrentPerform(
        iterations: Int,
        execute work: @Sendable (Int) -> Void
    ) {
        sqRequire(iterations >= 0, "SQQueue.concurrentPerform: negative iteration count")
        if iterations == 0 {
            return
        }
        withoutActuallyEscaping(work) { escapable in
            var body = SQPerformBody(work: escapable)
            withUnsafeMutablePointer(to: &body) { pointer in
                cq_apply_ranges_f(
                    iterations,
                    cq_get_global_queue(0, 0),
                    UnsafeMutableRawPointer(pointer),
                    sqRunStackRange)
            }
        }
    }
}
