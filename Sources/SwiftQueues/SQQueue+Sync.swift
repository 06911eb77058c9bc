import CQueueCore

// The machinery of `sync`: the frame on the caller's stack, the call the C core runs, and
// what the closure produced.

/// The state of a `sync` call, on the caller's stack for the whole (blocking) C call: the
/// closure and its outcome. Nothing in it is allocated on the heap.
@usableFromInline
internal struct SQSyncFrame<T> {
    @usableFromInline
    internal let work: () throws -> T
    @usableFromInline
    internal var result: SQSyncOutcome<T>?

    @inlinable
    internal init(work: @escaping () throws -> T) {
        self.work = work
        self.result = nil
    }

    @inlinable
    internal var outcome: SQSyncOutcome<T> {
        // safety: the C core has run the function before cq_sync_f returned.
        result.unsafelyUnwrapped
    }

    @inlinable
    internal mutating func run(on queue: OpaquePointer, barrier: Bool) {
        withUnsafeMutablePointer(to: &self) { frame in
            var call = SQSyncCall(
                invoke: { SQSyncFrame<T>.invoke($0) }, frame: UnsafeMutableRawPointer(frame))
            withUnsafeMutablePointer(to: &call) { call in
                if barrier {
                    cq_barrier_sync_f(queue, call, sqRunSyncFrame)
                } else {
                    cq_sync_f(queue, call, sqRunSyncFrame)
                }
            }
        }
    }

    @inlinable
    internal static func invoke(_ frame: UnsafeMutableRawPointer) {
        let frame = frame.assumingMemoryBound(to: SQSyncFrame<T>.self)
        do {
            frame.pointee.result = .value(try frame.pointee.work())
        } catch {
            frame.pointee.result = .error(error)
        }
    }
}

/// The C trampoline for `sync`: `context` points to an ``SQSyncCall`` on the caller's stack.
@usableFromInline
internal let sqRunSyncFrame: cq_function_t = { context in
    // safety: the caller keeps the call and its frame alive and unmoved until cq_sync_f
    // returns, and the C core calls the function before it returns.
    let call = context.unsafelyUnwrapped.assumingMemoryBound(to: SQSyncCall.self)
    call.pointee.invoke(call.pointee.frame)
}

/// The context pointer of a `sync` call: a frame, and the function that runs it.
///
/// `invoke` is a closure without captures, made where `sync` is specialized (it names
/// `SQSyncFrame<T>` with the caller's `T`), so calling it costs no allocation and no generic
/// metadata lookup. (Reaching the frame's type through a metatype instead made the C trampoline
/// run the unspecialized generic code, which looks metadata up in the runtime's cache twice per
/// call: half of `sync`'s time.)
@usableFromInline
internal struct SQSyncCall {
    @usableFromInline
    internal let invoke: (UnsafeMutableRawPointer) -> Void
    @usableFromInline
    internal let frame: UnsafeMutableRawPointer

    @inlinable
    internal init(invoke: @escaping (UnsafeMutableRawPointer) -> Void, frame: UnsafeMutableRawPointer) {
        self.invoke = invoke
        self.frame = frame
    }
}

/// What a `sync` call's closure produced.
@usableFromInline
internal enum SQSyncOutcome<T> {
    case value(T)
    case error(any Error)
}
