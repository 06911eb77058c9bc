@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import CQueueCore

// The second half of the take-over (see SQQueue+GlobalExecutor.swift). Since Swift 6.2 the
// standard library keeps the default executor as an object (`Task.defaultExecutor`), and some
// of its own code enqueues straight onto that object instead of going through the runtime's
// global-enqueue hooks: `Task.yield()` enqueues onto `Task.currentExecutor`, and `Task.sleep`
// onto `Task.currentSchedulingExecutor`, which for a task without a preference are the
// default executor. With only the hooks installed, every yield and every sleep's wake-up ran
// on libdispatch's threads, which then handed the task back to the pool: a yield cost
// 5-25 µs instead of 0.5 (a hop through a second thread pool each time, with its wake-ups),
// and the documentation's promise that sleep wake-ups run on the pool was false.
//
// So the install also makes the pool the default executor object, through the standard
// library's executor factory (`_createExecutors(factory:)`, experimental SPI in this
// toolchain, 6.3). The main executor stays what it was.

/// The pool as the standard library's default executor object. Not public API.
internal final class SQPoolDefaultExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    /// The default executor this one replaced: a delay on a clock whose durations are not
    /// `Swift.Duration` (which the pool cannot convert) goes to it.
    private let previous: any TaskExecutor

    init(previous: any TaskExecutor) {
        self.previous = previous
    }

    func enqueue(_ job: consuming ExecutorJob) {
        sqEnqueueGlobal(UnownedJob(job), afterNanoseconds: 0)
    }

    func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        if let duration = delay as? Swift.Duration {
            sqEnqueueGlobal(
                UnownedJob(job), afterNanoseconds: SQTimeInterval.clampedNanoseconds(duration))
        } else if let scheduling = previous as? any SchedulingExecutor {
            scheduling.enqueue(job, after: delay, tolerance: tolerance, clock: clock)
        } else {
            // No executor that knows the clock: the job runs now, as an early wake-up (which
            // a sleep on such a clock must tolerate: it re-checks its deadline).
            sqEnqueueGlobal(UnownedJob(job), afterNanoseconds: 0)
        }
    }

    func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        enqueue(job, after: clock.now.duration(to: instant), tolerance: tolerance, clock: clock)
    }
}

/// The factory handed to the standard library: the pool as the default executor, the main
/// executor unchanged.
private enum SQPoolExecutorFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { sqMainExecutorKept.unsafelyUnwrapped }
    static var defaultExecutor: any TaskExecutor { sqPoolDefaultExecutorMade.unsafelyUnwrapped }
}

// Set under the install lock, before `_createExecutors` reads them through the factory.
nonisolated(unsafe) private var sqMainExecutorKept: (any MainExecutor)?
nonisolated(unsafe) private var sqPoolDefaultExecutorMade: SQPoolDefaultExecutor?

/// Makes the pool the standard library's default executor object. Called once, under the
/// install lock of `tryInstallAsGlobalConcurrentExecutor`.
internal func sqInstallPoolAsDefaultExecutor() {
    sqMainExecutorKept = MainActor.executor
    sqPoolDefaultExecutorMade = SQPoolDefaultExecutor(previous: Task.defaultExecutor)
    _createExecutors(factory: SQPoolExecutorFactory.self)
}
