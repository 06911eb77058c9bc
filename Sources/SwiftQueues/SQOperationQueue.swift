import CQueueCore
import Synchronization

/// Runs operations when they are ready, at most ``maxConcurrentOperationCount`` at a time,
/// highest ``SQOperation/queuePriority`` first: SwiftQueues' Foundation `OperationQueue`.
///
/// A queue has no threads of its own. It submits each operation's ``SQOperation/start()`` to
/// the C core's pool when the operation is ready and a slot is free: to the global queue of
/// the operation's quality of service, or to ``underlyingQueue`` if set. The slot is held
/// until the operation finishes (for an asynchronous operation, when it says so), and then
/// the next ready operation is submitted.
///
/// - Readiness is pushed, not polled: an operation is offered to the queue when its last
///   dependency finishes or it is cancelled, so a chain or a fan-in of n operations costs
///   O(n) in all.
/// - Among ready operations waiting for a slot: higher ``SQOperation/queuePriority`` first,
///   FIFO among equals (in the order they became ready). Operations that are not ready never
///   hold up ready ones.
/// - ``isSuspended`` stops the queue from starting operations; ``addBarrierBlock(_:)`` runs a
///   closure after everything added before it and before anything added after it.
/// - Observation without KVO: ``observeStateChanges(_:)`` and ``stateChanges``;
///   `await queue.untilAllOperationsAreFinished` waits from async code.
///
/// Thread-safety: every member may be used from any thread. The queue's state is guarded by
/// one lock, held for O(1) work per operation event (and never while user code runs). A queue
/// that holds operations stays alive until they have finished, even if you drop it.
///
/// Misuse stops the process with a message: adding an operation twice or to two queues,
/// adding one that has started or finished, setting ``underlyingQueue`` on a queue that holds
/// operations, a ``maxConcurrentOperationCount`` below -1, and waiting for the queue from one
/// of its own operations.
///
/// Porting from Foundation: `OperationQueue` → `SQOperationQueue`; the member names are the
/// same (see <doc:OperationQueues> for the differences).
open class SQOperationQueue: @unchecked Sendable, CustomStringConvertible {
    /// The queue lock and what it guards. The operation lock may be taken inside it, never
    /// the other way round; observer hubs' locks are leaves.
    internal let state = SQOperationLock(LockedState(), alignment: 64)

    /// Mirrors `LockedState.suspended` (stored under the lock; the start path reads it
    /// relaxed: a late read only lets an operation that was already being started start).
    internal let suspendedFlag = Atomic<Bool>(false)

    /// Whether anyone observes the queue (set once, when the first observer registers), so
    /// that the start path takes no lock for `started` changes otherwise.
    internal let observedFlag = Atomic<Bool>(false)

    /// The value for ``maxConcurrentOperationCount`` that lets the queue start every ready
    /// operation at once, leaving the number that run in parallel to the pool (-1).
    ///
    /// Foundation: `OperationQueue.defaultMaxConcurrentOperationCount`.
    public static let defaultMaxConcurrentOperationCount = -1

    /// How many of this queue's operations have finished, for a total you set. Each operation
    /// (barriers excepted) that finishes while ``Progress/totalUnitCount`` is above 0 adds one
    /// to ``Progress/completedUnitCount``.
    ///
    /// Thread-safe. Foundation: `OperationQueue.progress` (a Foundation `Progress`; see
    /// ``Progress``).
    public let progress = Progress()

    /// An empty, active queue: no limit (``defaultMaxConcurrentOperationCount``), QoS
    /// `.default`, no underlying queue.
    ///
    /// Never blocks. Foundation: `OperationQueue()`.
    public init() {}

    deinit {
        // Only an empty queue can be freed (its operations keep it alive); end the
        // observers' streams.
        let observers = state.withLock { $0.observers }
        state.deallocate()
        observers?.closeAll()
    }

    // MARK: - Adding operations

    /// Adds `operation`; the queue starts it once it is ready and a slot is free.
    ///
    /// Stops the process with a message if the operation is already in this or another queue,
    /// or has started or finished. The queue keeps the operation until it finishes.
    ///
    /// O(1); thread-safe; never blocks. Foundation: `OperationQueue.addOperation(_:)`.
    open func addOperation(_ operation: SQOperation) {
        enqueue(operation)
    }

    /// Adds `operations`, in order, as ``addOperation(_:)-(SQOperation)`` does each; with
    /// `waitUntilFinished`, then waits until all of them have finished.
    ///
    /// Blocks only with `waitUntilFinished: true`.
    /// Foundation: `OperationQueue.addOperations(_:waitUntilFinished:)`.
    open func addOperations(_ operations: [SQOperation], waitUntilFinished wait: Bool) {
        for operation in operations {
            enqueue(operation)
        }
        if wait {
            for operation in operations {
                operation.waitUntilFinished()
            }
        }
    }

    /// Adds an ``SQBlockOperation`` running `block`. In a subclass, through
    /// ``addOperation(_:)-(SQOperation)`` (so an override of it sees the operation).
    ///
    /// One allocation for the operation (plus the closure's context, if it captures) and the
    /// C core's task. Thread-safe; never blocks.
    /// Foundation: `OperationQueue.addOperation(_:)` with a closure.
    open func addOperation(_ block: @escaping @Sendable () -> Void) {
        guard type(of: self) == SQOperationQueue.self else {
            // A subclass may override addOperation(_: SQOperation): the block's operation goes
            // through it, as in Foundation.
            addOperation(SQBlockOperation(block: block) as SQOperation)
            return
        }
        enqueueClaimed(SQBlockOperation(block: block, claimedBy: Unmanaged.passUnretained(self)))
    }

    /// Adds a barrier: `barrier` runs once every operation added before it has finished
    /// (completion blocks included), and no operation added after it starts before it has
    /// returned. It takes a slot like any operation and ignores ``cancelAllOperations()``:
    /// it always runs.
    ///
    /// O(1) (plus O(log number of pending barriers) when each operation finishes).
    /// Thread-safe; never blocks. Foundation: `OperationQueue.addBarrierBlock(_:)`.
    open func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        let operation = SQBlockOperation(block: barrier, claimedBy: Unmanaged.passUnretained(self))
        operation.isQueueBarrier = true
        enqueueClaimed(operation)
    }

    // MARK: - Inspecting

    /// The operations in the queue (not yet finished), in the order they were added.
    ///
    /// A snapshot, out of date as soon as it returns. O(n); thread-safe; takes the queue lock.
    /// Foundation: `OperationQueue.operations`.
    open var operations: [SQOperation] {
        state.withLock { $0.snapshot() }
    }

    /// How many operations are in the queue (not yet finished).
    ///
    /// A snapshot. Thread-safe; takes the queue lock briefly.
    /// Foundation: `OperationQueue.operationCount`.
    open var operationCount: Int {
        state.withLock { $0.count }
    }

    // MARK: - Configuration

    /// The most operations the queue runs at once: -1
    /// (``defaultMaxConcurrentOperationCount``, the default) for no limit, 1 for one at a
    /// time, 0 for none. Never exceeded while it holds; it may be changed at any time:
    /// raised, it starts waiting operations at once; lowered, it starts nothing new until
    /// fewer than the new limit run (running operations are not interrupted).
    ///
    /// Stops the process with a message for values below -1. Thread-safe; never blocks.
    /// Foundation: `OperationQueue.maxConcurrentOperationCount`.
    open var maxConcurrentOperationCount: Int {
        get { state.withLock { $0.maxConcurrent } }
        set { setMaxConcurrentOperationCount(newValue) }
    }

    /// Whether the queue is suspended: it starts no operation while it is (operations
    /// already started go on; one that was being handed to a pool thread at that instant
    /// may still start). Setting `false` starts the waiting ready operations.
    ///
    /// Thread-safe; never blocks. Foundation: `OperationQueue.isSuspended`.
    open var isSuspended: Bool {
        get { state.withLock { $0.suspended } }
        set { setSuspended(newValue) }
    }

    /// A name for debugging; `"SQOperationQueue 0x…"` unless set, and again after it is set to
    /// `nil` (Foundation on Linux then reads back `""`).
    ///
    /// Thread-safe. Foundation: `OperationQueue.name`.
    open var name: String? {
        get { state.withLock { $0.name } ?? "SQOperationQueue \(sqAddress(self))" }
        set { state.withLock { $0.name = newValue } }
    }

    /// The quality of service of operations that have none of their own (their
    /// ``SQOperation/qualityOfService`` was never set): it picks the global queue they run
    /// on (see ``SQQoS``). Applies to operations added after it is set. `.default` unless set.
    ///
    /// Thread-safe. Foundation: `OperationQueue.qualityOfService`.
    open var qualityOfService: SQQoS.QoSClass {
        get { state.withLock { $0.qualityOfService } }
        set { state.withLock { $0.qualityOfService = newValue } }
    }

    /// The queue the operations' ``SQOperation/start()`` runs on, instead of the global
    /// queues: operations then ignore their quality of service, and a serial queue runs them
    /// one at a time whatever ``maxConcurrentOperationCount`` says. `nil` unless set; the
    /// queue keeps it alive.
    ///
    /// May be set only while the queue holds no operation: otherwise the process stops with
    /// a message. Thread-safe. Foundation: `OperationQueue.underlyingQueue`.
    open var underlyingQueue: SQQueue? {
        get { state.withLock { $0.underlying } }
        set { setUnderlyingQueue(newValue) }
    }

    /// `<SQOperationQueue "name">`.
    open var description: String {
        "<\(type(of: self)) \"\(name ?? "")\">"
    }

    // MARK: - Cancelling and waiting

    /// Cancels every operation in the queue now (``SQOperation/cancel()``), barriers
    /// excepted. Cancelled operations are ready: the queue starts them, and they finish
    /// without running their work, as slots allow. Operations added later are not
    /// cancelled.
    ///
    /// O(n); thread-safe; never blocks (observers may run on the calling thread).
    /// Foundation: `OperationQueue.cancelAllOperations()`.
    open func cancelAllOperations() {
        for operation in operations {
            operation.cancel()
        }
    }

    /// Waits until the queue holds no operation: every operation added before the call, and
    /// any added meanwhile from other threads, has finished. Returns at once if the queue is
    /// empty. A suspended queue never empties.
    ///
    /// Blocks (a pool thread that waits hands its CPU to a spare thread). Calling it from one
    /// of the queue's own operations would wait for ever: that stops the process with a
    /// message. Foundation: `OperationQueue.waitUntilAllOperationsAreFinished()`.
    open func waitUntilAllOperationsAreFinished() {
        waitUntilEmpty()
    }

    // MARK: - Well-known queues

    /// The queue of operations that run on the main thread: one at a time, on
    /// ``SQQueue/main`` (so once the main thread runs ``SQQueue/runMain()``, or, in a program
    /// that ended its main thread in libdispatch's `dispatchMain()`, inside libdispatch's main
    /// queue, in turn with `DispatchQueue.main` work). As in
    /// Foundation, its ``maxConcurrentOperationCount`` stays 1 (setting it changes nothing)
    /// and its ``qualityOfService`` is `.userInteractive`.
    ///
    /// A singleton. Foundation: `OperationQueue.main`.
    public static let main: SQOperationQueue = {
        let queue = SQOperationQueue()
        queue.state.withLock { state in
            state.name = "SQOperationQueue.main"
            state.underlying = SQQueue.main
            state.maxConcurrent = 1
            state.limit = 1
            state.qualityOfService = .userInteractive
        }
        return queue
    }()

    /// The queue running the calling code: the queue that started the operation (whose
    /// ``SQOperation/start()``, completion block or observers) the caller runs in, or
    /// ``main`` on the main queue or the main thread; otherwise `nil`.
    ///
    /// Thread-safe; never blocks. Foundation: `OperationQueue.current`.
    public static var current: SQOperationQueue? {
        if SQOperationContext.current != nil {
            // The operation's queue until the queue lets it go (see operationFinished).
            return SQOperationContext.currentOperationQueue()
        }
        if cq_thread_is_main() || cq_queue_is_current(SQQueue.main.handle) {
            return main
        }
        return nil
    }
}
