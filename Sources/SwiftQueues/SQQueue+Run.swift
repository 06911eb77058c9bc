import CQueueCore

extension SQQueue {
    /// Runs `work` on this queue and returns its value, or throws its error, without blocking
    /// a thread: the calling task suspends until the queue has run the closure. The async
    /// counterpart of ``sync(flags:execute:)``, and the way to move CPU-heavy or blocking work
    /// off Swift's cooperative pool onto ours (see <doc:SwiftConcurrency>).
    ///
    /// Order: like ``async(group:qos:flags:execute:)``, so a serial queue runs the closure after
    /// the work submitted before it; with ``SQWorkItemFlags/barrier`` it runs alone on a
    /// concurrent queue. Everything the caller did before the call happens-before the closure,
    /// and the closure's effects happen-before `run` returns.
    ///
    /// Cancellation: if the calling task is cancelled before the closure starts, `run` throws
    /// `CancellationError` at once and the closure never runs; once it has started, it runs to
    /// the end and `run` returns its result. (Inside the closure `Task.isCancelled` is `false`:
    /// it does not run in a task.)
    ///
    /// Cost: one allocation (the closure's box, which also carries the hand-off) and one
    /// `cq_async_f`. Thread-safe.
    public final func run<T: Sendable>(
        flags: SQWorkItemFlags = [],
        execute work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let box = SQQueueRun(work)
        let result = await box.wait {
            let context = box.retainedContext()
            if flags.contains(.barrier) {
                cq_barrier_async_f(handle, context, sqFireCallback)
            } else {
                cq_async_f(handle, context, sqFireCallback)
            }
        }
        guard let result else {
            throw CancellationError()
        }
        return try result.get()
    }
}

/// The closure of one ``SQQueue/run(flags:execute:)`` and its hand-off.
private final class SQQueueRun<T: Sendable>: SQResumption<Result<T, any Error>>,
    @unchecked Sendable
{
    private let work: @Sendable () throws -> T

    init(_ work: @escaping @Sendable () throws -> T) {
        self.work = work
    }

    /// On the queue: runs the closure unless the waiter was cancelled first.
    override func fire() {
        guard claim() else {
            return
        }
        finish(Result { try work() })
    }
}
