import CQueueCore

// Swift concurrency jobs on our queues: every queue is a `TaskExecutor`, and an `SQSerialQueue`
// is also a `SerialExecutor` (SQSerialQueue+Executor.swift). A job is submitted straight to the
// C core: its pointer is the context of `cq_async_f`, the queue's C trampoline runs it, and
// nothing is allocated per job beyond the C core's task record (from a per-thread cache).
//
// The trampoline needs the executor the job runs on (the runtime compares it with the task's
// preferred executor and with actors' executors). It is fixed for the global queues and the main
// queue (a trampoline of their own each). For a queue the program made, the trampoline asks the
// C core which queue it runs on (`cq_get_current_queue`: the innermost queue of the running
// thread, which for a task is the queue it was submitted to) and finds the wrapper in that C
// queue's context pointer, which the wrapper's initializer sets. Each pending job holds a
// reference to the wrapper, so that pointer is valid until the job has run.

extension SQQueue: TaskExecutor {
    /// Runs `job` on this queue: a serial queue runs it in order with its other work, a
    /// concurrent queue alongside it. Called by the Swift runtime for tasks that prefer this
    /// queue (`withTaskExecutorPreference`, `Task(executorPreference:)`,
    /// `group.addTask(executorPreference:)`) and, on an ``SQSerialQueue``, for actors whose
    /// executor it is. Not meant to be called directly.
    ///
    /// A job whose priority is above a global queue's runs in the band of its own priority (a
    /// `.high` task preferring `SQQueue.global()` does not wait behind default work). Other
    /// queues run their jobs at the queue's priority: an actor on an ``SQSerialQueue`` of the
    /// default priority runs a `.high` caller's job in the default band (no escalation; give
    /// the queue the priority of its most urgent callers).
    ///
    /// Cost: one `cq_async_f` with the job as its context (no allocation of ours; one reference
    /// count increment on the wrapper of a queue the program made). Thread-safe; never blocks.
    public final func enqueue(_ job: consuming ExecutorJob) {
        var target = handle
        if let globalPriority, let urgent = SQQueue.Priority(jobPriority: job.priority),
            urgent.isHigher(than: globalPriority)
        {
            // A global queue's job of a higher priority (a `.high` task preferring
            // `SQQueue.global()`) runs in its own priority's band, as Dispatch raises a queue to
            // its most urgent work: it does not wait behind the band's work. The global queues
            // differ only in their band, so the job still runs on this executor (this queue's
            // trampoline says so to the runtime).
            target = cq_get_global_queue(urgent.cValue, 0)
        }
        let unowned = UnownedJob(job)
        if !isImmortal {
            // Balanced by the trampoline once the job has run.
            _ = Unmanaged.passRetained(self)
        }
        cq_async_f(target, sqJobContext(unowned), jobTrampoline)
    }

    /// This queue as the runtime's unowned task-executor reference.
    ///
    /// Thread-safe; never blocks.
    public final func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}

// MARK: - Jobs as C contexts

/// A job as the `void *` context of a C call (an `UnownedJob` is one pointer).
@inline(__always)
internal func sqJobContext(_ job: UnownedJob) -> UnsafeMutableRawPointer {
    unsafeBitCast(job, to: UnsafeMutableRawPointer.self)
}

/// The job a C trampoline was given.
@inline(__always)
internal func sqJob(_ context: UnsafeMutableRawPointer?) -> UnownedJob {
    unsafeBitCast(context!, to: UnownedJob.self)
}

/// The wrapper of the queue the calling C task was submitted to, which holds a reference taken
/// by `SQQueue.enqueue` for this job (see the comment at the top of this file).
@inline(__always)
private func sqCurrentQueue<Queue: SQQueue>(_: Queue.Type) -> Unmanaged<Queue> {
    guard let current = cq_get_current_queue(),
        let context = cq_get_context(sqObject(current))
    else {
        fatalError("SwiftQueues: a Swift job ran outside the queue it was enqueued on")
    }
    return Unmanaged<Queue>.fromOpaque(context)
}

// MARK: - Trampolines

/// A serial queue the program made: the job runs isolated to the queue (as a serial executor,
/// for actors and for tasks that prefer it alike).
///
/// Not also declared as the task executor: the runtime runs a call from one actor to another
/// in place, on the same thread, only when both the serial executor and the task executor stay
/// the same, and a task that prefers no executor has none. Declaring the queue would make every
/// call between two actors sharing the queue (the usual reason to put actors on one queue) a
/// submission behind the queue's other work; not declaring it costs a task that prefers this
/// queue a submission when it calls an actor on it.
internal let sqRunSerialQueueJob: cq_function_t = { context in
    let queue = sqCurrentQueue(SQSerialQueue.self)
    queue._withUnsafeGuaranteedRef { queue in
        sqJob(context).runSynchronously(on: queue.asUnownedSerialExecutor())
    }
    queue.release()
}

/// A concurrent queue the program made: the job runs with it as the task executor.
internal let sqRunConcurrentQueueJob: cq_function_t = { context in
    let queue = sqCurrentQueue(SQConcurrentQueue.self)
    queue._withUnsafeGuaranteedRef { queue in
        sqJob(context).runSynchronously(on: queue.asUnownedTaskExecutor())
    }
    queue.release()
}

/// The main queue (on the main thread): as a serial queue the program made (see
/// ``sqRunSerialQueueJob``).
internal let sqRunMainQueueJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: SQQueue.main.asUnownedSerialExecutor())
}

internal let sqRunGlobalHighJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: SQQueue.globalHigh.asUnownedTaskExecutor())
}

internal let sqRunGlobalDefaultJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: SQQueue.globalDefault.asUnownedTaskExecutor())
}

internal let sqRunGlobalLowJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: SQQueue.globalLow.asUnownedTaskExecutor())
}

internal let sqRunGlobalBackgroundJob: cq_function_t = { context in
    sqJob(context).runSynchronously(on: SQQueue.globalBackground.asUnownedTaskExecutor())
}
