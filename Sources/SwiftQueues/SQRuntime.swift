import CQueueCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The runtime as a whole: its counters, a snapshot of its queues, workers and sources, and a
/// human-readable dump (docs/profiling.md).
///
/// Thread-safety: every member may be used from any thread. The values are read without
/// stopping the runtime: each is exact as of some moment during the call.
public enum SQRuntime {
    /// Event counts since the process started (C: `struct cq_runtime_counters`). Per-worker
    /// counts are summed on read; none ever goes down.
    public struct Counters: Sendable, Equatable {
        /// Work items run: tasks, group tasks, source handlers, apply helpers, and each
        /// operation an ``SQOperationQueue`` starts (it may start many inside one work item).
        public var tasksRun: UInt64
        /// Items a worker took from another worker's run queue.
        public var steals: UInt64
        /// Times a worker went to sleep for want of work.
        public var parks: UInt64
        /// Times a parked worker was woken.
        public var unparks: UInt64
        /// Spare threads woken or started to take a blocked worker's CPU.
        public var spareThreads: UInt64
        /// Times the thread limit stopped the runtime from adding a thread.
        public var threadLimitHits: UInt64
        /// `asyncAfter` calls run plus timer source fires.
        public var timerFires: UInt64
        /// Source event handlers run.
        public var sourceEvents: UInt64
        /// Runtime threads created so far, of every kind (workers, spares, the monitor, the
        /// reactor...): a count that keeps growing means threads are created and ended.
        public var threadsStarted: UInt64
        /// Overcommit threads woken or started because a serial queue's work waited while
        /// every worker was stuck in a long task (Dispatch's serial queues overcommit too).
        public var overcommitWakeups: UInt64
    }

    /// The counters now (`cq_runtime_get_counters`).
    public static var counters: Counters {
        var c = cq_runtime_counters()
        _ = cq_runtime_get_counters(&c, MemoryLayout<cq_runtime_counters>.size)
        return Counters(
            tasksRun: c.tasks_run, steals: c.steals, parks: c.parks, unparks: c.unparks,
            spareThreads: c.spare_threads, threadLimitHits: c.thread_limit_hits,
            timerFires: c.timer_fires, sourceEvents: c.source_events,
            threadsStarted: c.threads_started, overcommitWakeups: c.overcommit_wakeups)
    }

    /// The pool's figures (C: `struct cq_runtime_info`), without the lists of ``snapshot()``.
    public struct PoolInfo: Sendable, Equatable {
        /// Workers: the CPUs this process may use (affinity, cgroup quota).
        public var workers: Int
        /// Pool threads alive now (workers, spares, threads blocked in runtime waits; not the
        /// runtime's few threads of its own: the reactor, the monitor, the I/O threads).
        public var threads: Int
        /// The most pool threads alive at once so far.
        public var threadsPeak: Int
        /// The most pool threads the runtime starts (`CQ_THREAD_LIMIT`).
        public var threadLimit: Int
        /// Pool threads blocked in a runtime wait (semaphore, group, sync).
        public var blockedThreads: Int
        /// Spare threads parked, ready to replace a blocked worker.
        public var spareThreads: Int
    }

    /// The pool now (`cq_runtime_get_info`; starts the pool if it is not running). Cheap: it
    /// walks no queue, unlike ``snapshot()``.
    public static var pool: PoolInfo {
        var info = cq_runtime_info()
        cq_runtime_get_info(&info)
        return PoolInfo(
            workers: Int(info.workers), threads: Int(info.threads),
            threadsPeak: Int(info.threads_peak), threadLimit: Int(info.thread_limit),
            blockedThreads: Int(info.blocked), spareThreads: Int(info.spares_parked))
    }

    /// A queue as ``snapshot()`` saw it.
    public struct QueueInfo: Sendable, Equatable {
        public enum Kind: Sendable, Equatable { case serial, concurrent, global, main }
        public var label: String
        public var kind: Kind
        /// Tasks it may run at once: 1 for serial and main queues, `nil` for unlimited.
        public var width: Int?
        public var suspendCount: Int
        /// Serial and main: 1 while a drain or a sync holds it; concurrent: its tasks handed to
        /// the pool and not finished, those still queued in the pool's run queues included (it
        /// may exceed the CPUs).
        public var running: Int
        /// How many items (tasks, barriers, sync callers, a source's turns, the wake-ups of
        /// queues that target it) wait in its list: a snapshot. 0 for global queues, whose
        /// items wait in the workers' run queues.
        public var queuedItems: Int
        /// Whether items wait in its list (`queuedItems > 0`).
        public var hasQueuedItems: Bool { queuedItems > 0 }
        public var isInactive: Bool
        /// The label of the queue it runs on (`""` for global queues).
        public var targetLabel: String
    }

    /// A worker (a run queue of the pool) as ``snapshot()`` saw it.
    public struct WorkerInfo: Sendable, Equatable {
        public enum State: Sendable, Equatable { case running, searching, parked, idle, retired }
        public var index: Int
        /// 0 normal, 1 express (high priority when the others are busy), 2 background.
        public var band: Int
        public var state: State
        /// The thread running it last (0: none yet).
        public var threadID: Int32
        public var isExtra: Bool
        public var tasksRun: UInt64
        public var steals: UInt64
        public var parks: UInt64
        /// Times it was woken from a park.
        public var unparks: UInt64
    }

    /// A dispatch source as ``snapshot()`` saw it.
    public struct SourceInfo: Sendable, Equatable {
        /// "timer", "read", "write", "signal", "proc", "vnode", "data-add", ...
        public var type: String
        public var handle: UInt
        public var mask: UInt
        public var targetLabel: String
        public var suspendCount: Int
        public var isActivated: Bool
        public var isCancelled: Bool
        public var isRegistered: Bool
    }

    /// Everything ``snapshot()`` returns.
    public struct Snapshot: Sendable {
        public var workers = 0
        public var threads = 0
        public var threadLimit = 0
        /// Pool threads blocked in a runtime wait (semaphore, group, sync).
        public var blockedThreads = 0
        /// Spare threads parked, ready to replace a blocked worker.
        public var spareThreads = 0
        /// Workers whose threads sleep in the kernel inside a task (outside runtime waits),
        /// found by the monitor while work of their band waited behind them, at its last look.
        /// It looks only while work waits: with nothing waiting (or once an extra worker has
        /// taken it) this is 0 even if a task still sleeps.
        public var blockedInTasks = 0
        public var queues: [QueueInfo] = []
        public var workerStates: [WorkerInfo] = []
        public var sources: [SourceInfo] = []
    }

    /// Every live queue (global, main, then created ones), the pool's workers and every live
    /// source (`cq_introspect`).
    public static func snapshot() -> Snapshot {
        final class Box { var snapshot = Snapshot() }
        let box = Box()
        var visitor = cq_introspect_visitor()
        visitor.pool = { ctx, p in
            guard let ctx, let p else { return }
            let box = Unmanaged<Box>.fromOpaque(ctx).takeUnretainedValue()
            box.snapshot.workers = Int(p.pointee.workers)
            box.snapshot.threads = Int(p.pointee.threads)
            box.snapshot.threadLimit = Int(p.pointee.thread_limit)
            box.snapshot.blockedThreads = Int(p.pointee.blocked)
            box.snapshot.spareThreads = Int(p.pointee.spares_parked)
            box.snapshot.blockedInTasks = Int(p.pointee.blocked_in_tasks)
        }
        visitor.queue = { ctx, q in
            guard let ctx, let q else { return }
            let box = Unmanaged<Box>.fromOpaque(ctx).takeUnretainedValue()
            let d = q.pointee
            let kind: QueueInfo.Kind
            switch d.kind {
            case CQ_INTROSPECT_QUEUE_CONCURRENT: kind = .concurrent
            case CQ_INTROSPECT_QUEUE_GLOBAL: kind = .global
            case CQ_INTROSPECT_QUEUE_MAIN: kind = .main
            default: kind = .serial
            }
            box.snapshot.queues.append(
                QueueInfo(
                    label: String(cString: d.label), kind: kind,
                    width: d.width == 0 ? nil : Int(d.width), suspendCount: Int(d.suspend_count),
                    running: Int(d.running), queuedItems: Int(d.queued),
                    isInactive: d.inactive, targetLabel: String(cString: d.target_label)))
        }
        visitor.worker = { ctx, w in
            guard let ctx, let w else { return }
            let box = Unmanaged<Box>.fromOpaque(ctx).takeUnretainedValue()
            let d = w.pointee
            let state: WorkerInfo.State
            switch d.state {
            case CQ_INTROSPECT_WORKER_RUNNING: state = .running
            case CQ_INTROSPECT_WORKER_SEARCHING: state = .searching
            case CQ_INTROSPECT_WORKER_PARKED: state = .parked
            case CQ_INTROSPECT_WORKER_RETIRED: state = .retired
            default: state = .idle
            }
            box.snapshot.workerStates.append(
                WorkerInfo(
                    index: Int(d.index), band: Int(d.band), state: state, threadID: d.tid,
                    isExtra: d.extra, tasksRun: d.tasks_run, steals: d.steals, parks: d.parks,
                    unparks: d.unparks))
        }
        visitor.source = { ctx, s in
            guard let ctx, let s else { return }
            let box = Unmanaged<Box>.fromOpaque(ctx).takeUnretainedValue()
            let d = s.pointee
            box.snapshot.sources.append(
                SourceInfo(
                    type: String(cString: d.type), handle: UInt(d.handle), mask: UInt(d.mask),
                    targetLabel: String(cString: d.target_label),
                    suspendCount: Int(d.suspend_count), isActivated: d.activated,
                    isCancelled: d.cancelled, isRegistered: d.registered))
        }
        withExtendedLifetime(box) {
            cq_introspect(&visitor, Unmanaged.passUnretained(box).toOpaque())
        }
        return box.snapshot
    }

    /// Writes the human-readable report (`cq_introspect_dump`) to standard error.
    public static func dump() {
        cq_introspect_dump(nil)
    }

    /// Whether pool threads take the label of the serial queue they drain as their thread
    /// name, for `perf report --sort comm` and `top -H` (`cq_runtime_set_thread_naming`; off
    /// by default, `CQ_THREAD_NAMES=1` in the environment turns it on). Set only.
    public static func setThreadNaming(_ on: Bool) {
        cq_runtime_set_thread_naming(on)
    }

    /// The `swiftqueues:operation_state` probe's states.
    internal enum OperationProbeState: Int32 {
        case executing = 1
        case finished = 2
    }

    /// Fires the `operation_state` USDT probe when a tracer is attached (one load otherwise).
    @inline(__always)
    internal static func probeOperationState(_ op: SQOperation, _ state: OperationProbeState) {
        if cq_probe_operation_enabled() {
            probeOperationStateSlow(op, state)
        }
    }

    @inline(never)
    private static func probeOperationStateSlow(_ op: SQOperation, _ state: OperationProbeState) {
        let name = op.name ?? String(describing: type(of: op))
        name.withCString { cq_probe_operation_state($0, state.rawValue) }
    }
}
