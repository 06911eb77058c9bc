import CQueueCore

/// The C trampoline for `concurrentPerform`: `context` points to an `(Int) -> Void` closure on
/// the caller's stack, which the C core calls from several threads at once (read-only).
@usableFromInline
internal let sqRunStackIteration: cq_apply_function_t = { context, iteration in
    // safety: the caller keeps the closure alive and unmoved until cq_apply_f returns, which is
    // after every iteration has returned; the closure is only read.
    context!.assumingMemoryBound(to: ((Int) -> Void).self).pointee(iteration)
}

extension SQQueue {
    /// Calls `work(i)` for every `i` in `0 ..< iterations`, in parallel on the default-priority
    /// global queue, and returns when every call has returned.
    ///
    /// The calling thread takes part; the range is split into chunks that idle workers take.
    /// Nested calls, and calls from inside work items, complete even when every worker is busy.
    /// The closure runs on several threads at once, hence `@Sendable`; it does not escape.
    ///
    /// Blocks until all iterations have run. Thread-safe. The closure stays on the caller's
    /// stack (at most one small allocation, for `withoutActuallyEscaping`).
    /// Dispatch: `DispatchQueue.concurrentPerform(iterations:execute:)`.
    @inlinable
    public static func concurrentPerform(
        iterations: Int,
        execute work: @Sendable (Int) -> Void
    ) {
        precondition(iterations >= 0, "SQQueue.concurrentPerform: negative iteration count")
        if iterations == 0 {
            return
        }
        withoutActuallyEscaping(work) { escapable in
            var closure: (Int) -> Void = escapable
            withUnsafeMutablePointer(to: &closure) { pointer in
                cq_apply_f(
                    iterations,
                    cq_get_global_queue(0, 0),
                    UnsafeMutableRawPointer(pointer),
                    sqRunStackIteration)
            }
        }
    }
}
