#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CQueueCore
import Synchronization

// Taking over Swift's global concurrent executor through the runtime's hooks
// (`swift_task_enqueueGlobal_hook` and the two delayed variants), as SwiftNIO's take-over
// does. The hooks are variables of libswift_Concurrency that it reads on every enqueue onto the
// global executor; each is a Swift-convention function pointer, hence `@convention(thin)`.

private typealias SQEnqueueOriginal = @convention(thin) (UnownedJob) -> Void
private typealias SQEnqueueHook = @convention(thin) (UnownedJob, SQEnqueueOriginal) -> Void
private typealias SQDelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
private typealias SQDelayHook = @convention(thin) (UInt64, UnownedJob, SQDelayOriginal) -> Void
private typealias SQDeadlineOriginal =
    @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
private typealias SQDeadlineHook =
    @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, SQDeadlineOriginal) -> Void

/// Whether our hooks are installed (written once, under `sqGlobalExecutorLock`).
private let sqGlobalExecutorInstalled = Atomic<Bool>(false)
private let sqGlobalExecutorLock = SQMutex<Void>(())

extension SQQueue {
    /// Makes the CQueueCore pool Swift's global concurrent executor for the whole process:
    /// every task and job that would run on the default executor (tasks without an executor
    /// preference, `nonisolated` async code, `Task.sleep` wake-ups) runs on the global queue of
    /// its priority instead (high ≥ `.userInitiated`, default for `.medium` and unspecified,
    /// low for `.utility`, background below). Opt-in; the counterpart of SwiftNIO's
    /// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`.
    ///
    /// Call it first thing in `main`, before any task is created. Work already handed to the
    /// default executor still runs there, so nothing is lost when it is called later, but a
    /// later call races with the runtime's reads of the hooks. It cannot be undone. Actors
    /// (default actors), the `MainActor` and tasks that prefer an executor are unaffected.
    ///
    /// Returns `true` if the pool is (now, or already was by an earlier call) the global
    /// executor; `false` if the runtime has no such hooks, or another library installed its
    /// own first (nothing is changed then).
    ///
    /// Thread-safe. The hooks are runtime internals (stable since Swift 5.9, present in this
    /// toolchain, 6.3), not API; it also replaces the standard library's default executor
    /// object (`Task.defaultExecutor`, through the executor factory, still SPI here), which
    /// `Task.yield()` and `Task.sleep` use without the hooks since Swift 6.2. See
    /// <doc:SwiftConcurrency> for what was measured.
    @discardableResult
    public static func tryInstallAsGlobalConcurrentExecutor() -> Bool {
        sqGlobalExecutorLock.withLock { _ in
            if sqGlobalExecutorInstalled.load(ordering: .acquiring) {
                return true
            }
            guard let enqueue = dlsym(nil, "swift_task_enqueueGlobal_hook"),
                let delay = dlsym(nil, "swift_task_enqueueGlobalWithDelay_hook"),
                let deadline = dlsym(nil, "swift_task_enqueueGlobalWithDeadline_hook"),
                enqueue.load(as: UnsafeRawPointer?.self) == nil,
                delay.load(as: UnsafeRawPointer?.self) == nil,
                deadline.load(as: UnsafeRawPointer?.self) == nil
            else {
                return false
            }
            let enqueueHook: SQEnqueueHook = { job, _ in
                cq_async_f(sqGlobalHandle(for: job), sqJobContext(job), sqRunDefaultExecutorJob)
            }
            let delayHook: SQDelayHook = { nanoseconds, job, _ in
                sqEnqueueGlobal(job, afterNanoseconds: Int64(clamping: nanoseconds))
            }
            let deadlineHook: SQDeadlineHook = { seconds, nanoseconds, _, _, clock, job, _ in
                var now = timespec()
                clock_gettime(clock == 2 ? CLOCK_MONOTONIC : CLOCK_BOOTTIME, &now)
                let (s, o1) = seconds.subtractingReportingOverflow(Int64(now.tv_sec))
                let (ns, o2) = s.multipliedReportingOverflow(by: 1_000_000_000)
                let (delay, o3) = ns.addingReportingOverflow(nanoseconds - Int64(now.tv_nsec))
                sqEnqueueGlobal(
                    job, afterNanoseconds: o1 || o2 || o3 ? (s < 0 ? 0 : .max) : delay)
            }
            // The delayed hooks first: once the plain one is set, the pool is in use.
            deadline.storeBytes(of: deadlineHook, as: SQDeadlineHook.self)
            delay.storeBytes(of: delayHook, as: SQDelayHook.self)
            enqueue.storeBytes(of: enqueueHook, as: SQEnqueueHook.self)
            // And the default executor object, which Task.yield and Task.sleep use directly
            // (SQQueue+DefaultExecutor.swift).
            sqInstallPoolAsDefaultExecutor()
            sqGlobalExecutorInstalled.store(true, ordering: .releasing)
            return true
        }
    }

    /// Whether ``tryInstallAsGlobalConcurrentExecutor()`` has made the pool Swift's global
    /// executor. Thread-safe; never blocks.
    public static var isGlobalConcurrentExecutor: Bool {
        sqGlobalExecutorInstalled.load(ordering: .acquiring)
    }
}

/// The C global queue for a job's priority (see `tryInstallAsGlobalConcurrentExecutor`).
private func sqGlobalHandle(for job: UnownedJob) -> OpaquePointer {
    let queue: SQQueue
    switch SQQueue.Priority(jobPriority: job.priority) ?? .default {
    case .high: queue = SQQueue.globalHigh
    case .default: queue = SQQueue.globalDefault
    case .low: queue = SQQueue.globalLow
    case .background: queue = SQQueue.globalBackground
    }
    return queue.handle
}

internal func sqEnqueueGlobal(_ job: UnownedJob, afterNanoseconds delay: Int64) {
    let handle = sqGlobalHandle(for: job)
    if delay <= 0 {
        cq_async_f(handle, sqJobContext(job), sqRunDefaultExecutorJob)
    } else {
        cq_after_f(cq_time(0, delay), handle, sqJobContext(job), sqRunDefaultExecutorJob)
    }
}

/// The default executor's identity, for jobs run on the pool in its place: a job of a task
/// without a preference runs as the default executor runs it (no serial executor, the
/// "undefined" task executor), so the runtime's hops behave as they do without us.
private let sqDefaultTaskExecutor = globalConcurrentExecutor.asUnownedTaskExecutor()

private let sqRunDefaultExecutorJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: sqDefaultTaskExecutor)
}
