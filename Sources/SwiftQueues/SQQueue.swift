import CQueueCore

/// A queue of work items run on the CQueueCore thread pool: SwiftQueues' `DispatchQueue`.
///
/// - A *serial* queue runs one work item at a time, in submission (FIFO) order. It is an
///   ``SQSerialQueue``, which can also run an actor (it is a `SerialExecutor`).
/// - A *concurrent* queue (``Attributes/concurrent``) starts work items in FIFO order and runs
///   them in parallel; a ``SQWorkItemFlags/barrier`` item runs alone. It is an
///   ``SQConcurrentQueue``.
/// - The *global* queues (``global(qos:)``, ``global(priority:)``) are concurrent queues at the
///   root of every hierarchy; the *main* queue (``main``) is serial and runs on the main thread
///   inside ``runMain()``.
///
/// `SQQueue` is the common base class, as `DispatchQueue` is of Apple's `DispatchSerialQueue` and
/// `DispatchConcurrentQueue`: ``init(label:qos:attributes:autoreleaseFrequency:target:)`` makes
/// an ``SQSerialQueue`` or an ``SQConcurrentQueue`` depending on `attributes` (so
/// `SQQueue(label: "a") is SQSerialQueue` holds), and every queue is one of the two. Every queue
/// is a `TaskExecutor` (see <doc:SwiftConcurrency>).
///
/// A queue's *target* queue decides where its work actually runs: a queue that targets a serial
/// queue becomes serial with it. Different serial queues run in parallel.
///
/// Thread-safety: every method may be called from any thread at any time. The wrapper owns one
/// reference to the underlying `cq_queue_t` and releases it in `deinit`; the C queue stays alive
/// while it still has work queued. Releasing a queue that is still suspended aborts the process
/// (as libdispatch does), so balance every ``suspend()`` with a ``resume()`` first.
///
/// Porting from Dispatch: `DispatchQueue` → `SQQueue`, `DispatchSerialQueue` →
/// ``SQSerialQueue``, `DispatchConcurrentQueue` → ``SQConcurrentQueue``; the method names and
/// labels are the same.
public class SQQueue: _SQQueueMaking, @unchecked Sendable {
    /// The C queue. Immutable; the C core is thread-safe.
    @usableFromInline
    internal let handle: OpaquePointer

    /// The label given at creation (for the global queues and the main queue, the C core's
    /// name for them). It names the queue in the C core's error messages.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.label`.
    public let label: String

    /// The QoS given at creation (``SQQoS/unspecified`` if none). For a global queue, the QoS
    /// of its priority (``SQQoS/userInitiated``, ``SQQoS/default``, ``SQQoS/utility``,
    /// ``SQQoS/background``); ``SQQoS/unspecified`` for the main queue.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.qos`.
    public let qos: SQQoS

    /// The C function that runs a Swift concurrency job submitted to this queue (its context is
    /// the job): it finds the executor to run the job on (see `SQQueue+Concurrency.swift`).
    internal let jobTrampoline: cq_function_t

    /// The global queues and the main queue: their wrappers are never freed, so a job needs no
    /// reference to them; any other queue's wrapper is retained for each pending job.
    internal let isImmortal: Bool

    /// For a global queue, its priority; nil for any other queue. A job of a higher priority
    /// given to a global queue runs in that priority's band (see ``enqueue(_:)``).
    internal let globalPriority: Priority?

    /// Takes over `handle`'s reference. Subclasses' initializers are the only callers.
    internal init(
        handle: OpaquePointer, label: String, qos: SQQoS, jobTrampoline: cq_function_t,
        isImmortal: Bool, globalPriority: Priority? = nil
    ) {
        self.handle = handle
        self.label = label
        self.qos = qos
        self.jobTrampoline = jobTrampoline
        self.isImmortal = isImmortal
        self.globalPriority = globalPriority
        if !isImmortal {
            // The job trampolines find the wrapper of the queue they run on through the C
            // queue's context (an unretained pointer: every job holds a reference). Set before
            // the queue is shared, as cq_set_context requires; nothing else uses it.
            cq_set_context(sqObject(handle), Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// Creates a C queue as ``init(label:qos:attributes:autoreleaseFrequency:target:)``
    /// describes: serial or concurrent, active or not, targeting `target` or the global queue
    /// of `qos`'s priority. Stops the process if memory is exhausted.
    internal static func makeHandle(
        label: String, qos: SQQoS, concurrent: Bool, inactive: Bool, target: SQQueue?
    ) -> OpaquePointer {
        let attr: cq_queue_attr_t? = concurrent ? cq_queue_attr_concurrent() : nil
        let made = inactive ? cq_queue_create_inactive(label, attr) : cq_queue_create(label, attr)
        guard let created = made else {
            fatalError("SQQueue(label: \"\(label)\"): cq_queue_create failed (out of memory)")
        }
        if let target {
            cq_set_target_queue(sqObject(created), target.handle)
        } else if qos.qosClass.priority != .default {
            // cq_queue_create already targets the default-priority global queue.
            cq_set_target_queue(sqObject(created), SQQueue.global(qos: qos.qosClass).handle)
        }
        return created
    }

    deinit {
        // Global queues and the main queue ignore it (and their wrappers are never freed).
        cq_release(sqObject(handle))
    }

    // MARK: - Well-known queues

    /// The serial queue bound to the main thread. Its work runs only on the main thread, once
    /// the main thread calls ``runMain()`` (or, in a program with an `async` main, once main
    /// first suspends: see <doc:SwiftConcurrency>).
    ///
    /// It is an ``SQSerialQueue``, so an actor can run on it (its methods then run on the main
    /// thread); Swift's `MainActor` is a different executor, which runs on the main thread too.
    /// Its type, ``SQMainQueue``, lets closures given to `async`, `asyncAfter` and `sync` be
    /// `@MainActor`, as the compiler lets those given to `DispatchQueue.main`.
    ///
    /// A cached singleton; the C queue is immortal. Dispatch: `DispatchQueue.main`.
    public static let main = SQMainQueue(mainQueue: ())

    // Internal: the job trampolines of the global queues name them directly.
    internal static let globalHigh = SQQueue.makeGlobal(.high)
    internal static let globalDefault = SQQueue.makeGlobal(.default)
    internal static let globalLow = SQQueue.makeGlobal(.low)
    internal static let globalBackground = SQQueue.makeGlobal(.background)
    /// Where the async bridges' notifies resume their tasks (``SQGroup/waitUntilEmpty()``,
    /// ``SQWorkItem/waitUntilFinished()``): a serial queue, so that a resumption gets an
    /// overcommit thread while CPU-bound work holds every worker. On the default global queue
    /// it waited for that work to end (about 20 s behind spinning tasks), though the item
    /// awaited had run at once. A resumption only enqueues the task's job: one queue is enough.
    internal static let resumptions = SQQueue(label: "swiftqueues.resumptions")

    private static func makeGlobal(_ priority: Priority) -> SQConcurrentQueue {
        let qos: SQQoS
        switch priority {
        case .high: qos = .userInitiated
        case .default: qos = .default
        case .low: qos = .utility
        case .background: qos = .background
        }
        return SQConcurrentQueue(global: priority, qos: qos)
    }

    /// The global concurrent queue of a priority. Workers prefer higher-priority work when they
    /// look for new work. Global queues ignore ``suspend()``, ``resume()`` and
    /// ``SQWorkItemFlags/barrier`` (a barrier is a plain work item there), and cannot be
    /// retargeted. ``global(qos:)`` picks one by QoS class; `SQQueue.global()` is the
    /// default-priority one.
    ///
    /// Returns a cached singleton; the C queue is immortal. Thread-safe; never blocks.
    /// Dispatch: `DispatchQueue.global(priority:)`.
    public static func global(priority: Priority) -> SQQueue {
        switch priority {
        case .high: return globalHigh
        case .default: return globalDefault
        case .low: return globalLow
        case .background: return globalBackground
        }
    }

    /// Runs the main queue on the calling thread, forever. Must be called from the main thread
    /// and not from inside a work item (the C core aborts otherwise). End the process with
    /// `exit()` from a work item.
    ///
    /// The same loop runs libdispatch's main queue, where Swift's `MainActor` and Dispatch's
    /// `DispatchQueue.main` put their work on Linux: `@MainActor` code keeps running on the
    /// main thread (C: `cq_main_with_libdispatch`; see <doc:SwiftConcurrency>).
    ///
    /// Blocks forever. Dispatch: `dispatchMain()`.
    public static func runMain() -> Never {
        cq_main_with_libdispatch()
    }

    // MARK: - Submitting work

    /// Submits `work` to run on this queue and returns at once.
    ///
    /// Every submitted closure runs exactly once; everything the caller did before the call
    /// happens-before the closure starts. With `group`, the group counts the work item until it
    /// has returned. With ``SQWorkItemFlags/barrier`` on a concurrent queue the closure runs
    /// alone: after every item submitted before it has finished and before any item submitted
    /// after it starts (on a serial queue the flag changes nothing; on a global queue it is
    /// ignored).
    ///
    /// `qos`, and the flags other than ``SQWorkItemFlags/barrier``, are accepted and ignored:
    /// the work runs at this queue's priority (see ``SQQoS``).
    ///
    /// Cost: no allocation on top of the closure's own context: the closure travels inside the
    /// C task's spare bytes. Thread-safe; never blocks.
    /// Dispatch: `DispatchQueue.async(group:qos:flags:execute:)`.
    @inlinable
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public final func async(
        group: SQGroup? = nil,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @Sendable () -> Void
    ) {
        sqSubmitInline(handle, group: group?.handle, work, barrier: flags.contains(.barrier))
    }

    /// Runs `work` on this queue, waits for it, and returns its result (or rethrows its error).
    ///
    /// On an idle queue the closure runs inline on the calling thread with no hand-off; on a
    /// busy serial queue the caller waits for the items submitted before it.
    /// On a concurrent queue it runs alongside other non-barrier items, unless `flags` contains
    /// ``SQWorkItemFlags/barrier``. The closure does not need to be `@Sendable`: it runs before
    /// `sync` returns, and the caller is blocked meanwhile.
    ///
    /// Cost: the closure's context and result live on the caller's stack; one small allocation
    /// (the box Swift's `withoutActuallyEscaping` needs to hand a non-escaping closure to C), and
    /// no generic metadata lookup at run time (the trampoline reaches this call's
    /// specialization through a context-free closure).
    ///
    /// Blocks until the closure has run. Calling `sync` onto a queue the calling thread is
    /// already running exclusively (directly, through a chain of syncs, or through a target
    /// queue) would deadlock; the C core aborts with a message instead. A pool worker that waits
    /// hands its CPU to a spare thread, so waiting never starves the pool. Thread-safe.
    /// Dispatch: `DispatchQueue.sync(flags:execute:)`.
    @inlinable
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public final func sync<T>(
        flags: SQWorkItemFlags, execute work: () throws -> T
    ) rethrows -> T {
        try syncHelper(barrier: flags.contains(.barrier), execute: work, rescue: { throw $0 })
    }

    /// Runs `work` on this queue, waits for it, and returns its result (or rethrows its error):
    /// ``sync(flags:execute:)`` with no flags.
    ///
    /// Dispatch: `DispatchQueue.sync(execute:)` (the generic one).
    @inlinable
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public final func sync<T>(execute work: () throws -> T) rethrows -> T {
        try syncHelper(barrier: false, execute: work, rescue: { throw $0 })
    }

    /// Runs `block` on this queue and waits for it: ``sync(flags:execute:)`` for a closure
    /// that returns nothing. Dispatch has this overload too, and code written for it needs
    /// it: without it, a one-expression closure whose expression returns a value it ignores
    /// (`queue.sync { semaphore.signal() }`) would make `sync` generic over that value.
    ///
    /// Dispatch: `DispatchQueue.sync(execute:)` (the one for `() -> Void`).
    @inlinable
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public final func sync(execute block: () -> Void) {
        syncHelper(barrier: false, execute: block, rescue: { _ in })
    }

    /// The body of `sync`: `rescue` turns the captured error back into a throw, which is what
    /// lets `sync` be `rethrows`.
    @inlinable
    internal final func syncHelper<T>(
        barrier: Bool,
        execute work: () throws -> T,
        rescue: (any Error) throws -> T
    ) rethrows -> T {
        let outcome = withoutActuallyEscaping(work) { work in
            var frame = SQSyncFrame(work: work)
            frame.run(on: handle, barrier: barrier)
            return frame.outcome
        }
        switch outcome {
        case .value(let value): return value
        case .error(let error): return try rescue(error)
        }
    }

    // MARK: - Configuration

    /// Makes this queue run its work through `queue` (`nil`: the default-priority global queue).
    ///
    /// Takes effect between work items: on a busy queue it is applied as a barrier. The queue
    /// keeps its target alive. Creating a cycle, or retargeting a global queue or the main
    /// queue, aborts the process with a message. Thread-safe; never blocks.
    /// Dispatch: `DispatchObject.setTarget(queue:)`.
    public final func setTarget(queue: SQQueue?) {
        cq_set_target_queue(sqObject(handle), queue?.handle)
    }

    /// Stops the queue from starting new work items. Counted: the queue runs again once every
    /// `suspend()` has been balanced by a ``resume()``. A work item that is already running
    /// finishes; suspension takes effect between items. Global queues and the main queue ignore
    /// it. A queue must not be released (its last wrapper reference dropped) while suspended.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchObject.suspend()`.
    public final func suspend() {
        cq_suspend(sqObject(handle))
    }

    /// Undoes one ``suspend()``. Resuming a queue that is not suspended aborts the process, and
    /// so does resuming an `.initiallyInactive` queue that is not suspended besides: start it
    /// with ``activate()`` (Dispatch asserts there too).
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchObject.resume()`.
    public final func resume() {
        cq_resume(sqObject(handle))
    }
}
