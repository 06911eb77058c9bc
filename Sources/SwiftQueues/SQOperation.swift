import CQueueCore
import Synchronization

/// A unit of work with a life cycle, dependencies, a priority, a completion block and
/// cancellation: SwiftQueues' Foundation `Operation`.
///
/// Subclass it and override ``main()``; run it by adding it to an ``SQOperationQueue`` or by
/// calling ``start()`` yourself. An operation goes through these states once, in this order:
/// *pending* (``isReady`` says whether its dependencies are done), *executing*
/// (``isExecuting``), *finished* (``isFinished``). ``cancel()`` may come at any point before it
/// finishes: a cancelled operation is ready at once, and when started it finishes without
/// running ``main()``.
///
/// - Dependencies (``addDependency(_:)``): an operation is ready once every dependency has
///   finished (or been cancelled and then finished). Readiness is kept with a counter per
///   operation, so each dependency edge costs O(1), however many operations wait. Dependencies
///   may cross queues and may be on operations in no queue. A cycle is never ready: its
///   members never run (nothing crashes); cancelling one member breaks it.
/// - Asynchronous operations: override ``main(finish:)`` and call the ``Finisher`` when the
///   work is done (the simple, safe way), or write them as Apple's Concurrency Programming
///   Guide shows: override ``start()``, ``isExecuting``, ``isFinished`` and ``isAsynchronous``
///   and call ``willChangeValue(forKey:)`` / ``didChangeValue(forKey:)`` around each change of
///   your own state. ``didChangeValue(forKey:)`` (and ``didChangeValue(for:)``) reads the
///   overridden properties and moves the operation on: a finished operation releases its
///   queue slot and its dependents, exactly as the guide's KVO notifications do on Darwin.
/// - Observation without KVO: ``observeStateChanges(_:)`` and ``stateChanges`` report every
///   transition, in order; `await op.untilFinished` waits from async code.
///
/// Thread-safety: every member may be used from any thread. State changes are serialised by a
/// lock per operation; user code (``main()``, completion blocks, overridden properties,
/// observers) never runs under it. Everything ``main()`` did happens-before ``isFinished``
/// reads `true`, before the completion block, before dependents start, and before
/// ``waitUntilFinished()`` returns.
///
/// Misuse stops the process with a message naming the operation: starting an operation that
/// is not ready, is executing or has finished, or that is in a queue; adding it to a queue
/// twice or to two queues.
///
/// Porting from Foundation: `Operation` → `SQOperation`; the member names are the same (see
/// <doc:OperationQueues> for the differences: no KVO registration, QoS classes are
/// ``SQQoS/QoSClass``).
open class SQOperation: @unchecked Sendable, CustomStringConvertible {
    // MARK: - Stored state

    /// What the operation lock protects. Written and read only inside `state.withLock`.
    internal struct LockedState {
        /// pending → executing → finished (a cancelled operation may skip executing).
        var phase: SQOperationPhase = .pending
        var cancelled = false
        /// The readiness last reported to observers (deduplicates ready/notReady).
        var reportedReady = true
        var reportedExecuting = false
        /// Dependencies not yet released: ready when 0.
        var unfinished = 0
        /// The dependencies, in the order they were added (strong: as Foundation does).
        var dependencies = SQOperationList()
        /// Operations waiting for this one (unretained); released (and emptied) when it
        /// finishes.
        var dependents = SQDependentList()
        /// The queue the operation was added to, until the operation finishes (the finish
        /// clears it under the lock, before the queue lets the operation go; the finishing
        /// start path names the queue in its context meanwhile: see
        /// `SQOperationContext.finishingQueue`). Unmanaged: a queue that holds operations
        /// keeps itself alive; code that uses it after dropping the lock takes a strong
        /// reference under the lock (`queueReference`).
        var queue: Unmanaged<SQOperationQueue>?
        /// The queue's start path has called ``SQOperation/start()`` (set for operations
        /// that may override it): an override may return and call `super.start()` later,
        /// from another thread (to hop onto a queue of its own), which is then the queue's
        /// start, not a start by hand.
        var startCalledByQueue = false
        var completionBlock: (@Sendable () -> Void)?
        /// Rarely used state, created on first use.
        var extras: SQOperationExtras?

        /// The extras, created if needed.
        mutating func makeExtras() -> SQOperationExtras {
            if let extras {
                return extras
            }
            let made = SQOperationExtras()
            extras = made
            return made
        }

        /// The observer hub, if anyone observes.
        var observers: SQOperationObservers<StateChange>? { extras?.observers }
    }

    /// The operation lock. A leaf except for the observer hub's lock; the queue lock may be
    /// held while taking it, never the other way round.
    internal let state: SQMutex<LockedState>

    /// `cancelled`, `finished`, `executing` and the default readiness, readable without the
    /// lock (see ``SQOperationFlags``): written under the lock with release stores, read with
    /// acquire loads by ``isCancelled``, ``isFinished``, ``isReady`` and the queue.
    internal let flags = Atomic<UInt8>(SQOperationFlags.baseReady)

    /// The waiters' handshake with the finishing thread (see ``SQOperationFlags``).
    internal let waitState = Atomic<UInt8>(0)

    /// ``queuePriority``'s raw value (relaxed: a hint read when the operation becomes ready).
    internal let priorityStorage = Atomic<Int8>(0)

    /// Counts events that may have made the operation ready (a dependency count reaching 0,
    /// a cancellation, a `didChangeValue`). Incremented (acquiring-and-releasing) before the
    /// queue is told; the queue's start path loads it (acquire) before asking ``isReady``, and
    /// parks a not-ready operation only if it has not moved since.
    internal let readySequence = Atomic<UInt32>(0)

    /// Set before the operation is shared (by ``SQOperationQueue/addBarrierBlock(_:)``): a
    /// barrier ignores ``cancel()`` and is gated by the queue instead of dependencies.
    @exclusivity(unchecked)
    internal var isQueueBarrier = false

    /// Set (under the operation lock, never cleared) when a first dependency is recorded, so
    /// that `deinit` of an operation that never had one takes no lock: `deinit` runs after
    /// every other access (the last release orders them), so a plain read is enough.
    @exclusivity(unchecked)
    internal var mayHaveDependencies = false

    /// Set before the operation is shared, for a block operation the queue made for itself
    /// (``SQOperationQueue/addOperation(_:)-(()->Void)``, ``SQOperationQueue/addBarrierBlock(_:)``):
    /// its blocks are let go when it finishes, and its queue retires it for the adding thread
    /// to free (see `SQOperationQueue+Retired.swift`).
    @exclusivity(unchecked)
    internal var isQueueMade = false

    /// Set by the adding thread that releases the queue's reference to a retired operation,
    /// before it releases it; read by `deinit`, which the last release orders after it: a
    /// `deinit` on such a thread hands whatever user code the operation still holds to the
    /// pool instead of releasing it there.
    @exclusivity(unchecked)
    internal var releasedByAddingThread = false

    // Queue-side fields: written and read only under the owning queue's lock (or, for
    // `queueTarget`, `queueQoS` and `owningQueue`, after the dispatch that the lock ordered).
    // Links are unmanaged: the queue holds one reference to each operation it contains.

    /// Where this operation stands in its queue.
    @exclusivity(unchecked) internal var queueState: SQOperationQueueSlot = .none
    /// Which ready list the operation is in (0 = veryLow ... 4 = veryHigh).
    @exclusivity(unchecked) internal var readyList: UInt8 = 2
    /// Taken for a slot of a width-1 queue with no underlying queue: submitted so that it
    /// overcommits, as on Foundation's serial dispatch queue (see `LockedState.take`).
    @exclusivity(unchecked) internal var queueOvercommits = false
    /// The QoS the queue resolved for the operation when it was added (its own, or the
    /// queue's); a block operation's extra blocks run at it.
    @exclusivity(unchecked) internal var queueQoS: SQQoS.QoSClass?
    /// The queue's FIFO of all its operations (for `operations`).
    @exclusivity(unchecked) internal var queuePrevious: Unmanaged<SQOperation>?
    @exclusivity(unchecked) internal var queueNext: Unmanaged<SQOperation>?
    /// The queue's ready list of this operation's priority.
    @exclusivity(unchecked) internal var readyPrevious: Unmanaged<SQOperation>?
    @exclusivity(unchecked) internal var readyNext: Unmanaged<SQOperation>?
    /// A chain of operations to submit once the queue lock is dropped.
    @exclusivity(unchecked) internal var dispatchNext: Unmanaged<SQOperation>?
    /// Order of addition to the queue (barriers compare it).
    @exclusivity(unchecked) internal var queueSequence: UInt64 = 0
    /// The C queue the operation is submitted to (the underlying queue, or the global queue
    /// of its quality of service), chosen when it is added.
    @exclusivity(unchecked) internal var queueTarget: OpaquePointer?
    /// The queue, for the start path (alive while the operation is in it: a queue that holds
    /// operations holds a reference to itself).
    @exclusivity(unchecked) internal var owningQueue: Unmanaged<SQOperationQueue>?

    // MARK: - Creating

    /// Creates a pending, ready operation with no dependencies, `queuePriority` `.normal` and
    /// no name. Subclasses override ``main()`` (or ``main(finish:)``).
    ///
    /// Never blocks. Foundation: `Operation()`.
    public init() {
        state = SQMutex(LockedState())
    }

    /// An operation created by `queue` for itself (`addOperation` with a closure,
    /// `addBarrierBlock`), already claimed by it: its locked state names the queue from the
    /// start, so the queue need not claim it under the lock (nobody else can see it before
    /// the queue links it).
    internal init(claimedBy queue: Unmanaged<SQOperationQueue>) {
        state = SQMutex(LockedState(queue: queue))
        isQueueMade = true
    }

    deinit {
        if releasedByAddingThread {
            releaseLeftoversOnPool()
        }
        // An operation keeps its dependencies; releasing the last operation of a long chain
        // would release the whole chain recursively and overflow the stack. Release it here
        // with a work list instead: a dependency nobody else holds gives up its own
        // dependencies before it is freed. (The first one waits in `single`: a chain
        // allocates nothing here.)
        guard mayHaveDependencies else { return }
        var single: SQOperation?
        var more: [SQOperation] = []
        func collect(_ list: SQOperationList) {
            for dependency in list.elementsForRelease {
                if single == nil {
                    single = dependency
                } else {
                    more.append(dependency)
                }
            }
        }
        collect(Self.detachFromDependencies(self))
        while true {
            guard var dependency = single.take() ?? more.popLast() else { break }
            if isKnownUniquelyReferenced(&dependency) {
                collect(Self.detachFromDependencies(dependency))
            }
        }
    }

    /// Takes `operation`'s dependencies (for its deinit, or the work list above) and, if some
    /// of its edges are still registered with them (it never ran, or was cancelled before they
    /// finished), takes it out of their dependents lists first: they hold it unretained, and
    /// may finish later. A dependency finishing meanwhile either no longer lists it or finds it
    /// deinitializing (`retainedUnlessDeinitializing`), under the same lock.
    private static func detachFromDependencies(_ operation: SQOperation) -> SQOperationList {
        let (dependencies, outstanding) = operation.state.withLock {
            ($0.dependencies.take(), $0.unfinished > 0)
        }
        if outstanding {
            for dependency in dependencies.elementsForRelease {
                _ = dependency.state.withLock { $0.dependents.remove(operation) }
            }
        }
        return dependencies
    }

    // MARK: - State

    /// Whether the operation may start: every dependency has finished, or it was cancelled.
    ///
    /// Override it to add conditions of your own (return `super.isReady && yours`) and call
    /// ``didChangeValue(forKey:)`` with `"isReady"` when they change: a queue asks this
    /// property before it starts the operation and again after such a call.
    /// Thread-safe; never blocks (one atomic load). Foundation: `Operation.isReady`.
    open var isReady: Bool {
        flags.load(ordering: .acquiring) & SQOperationFlags.baseReady != 0
    }

    /// Whether the operation is running: ``start()`` has begun it and it has not finished.
    ///
    /// Asynchronous operations written in the guide's style override it (with
    /// ``willChangeValue(forKey:)`` / ``didChangeValue(forKey:)`` around each change).
    /// Thread-safe; never blocks (one atomic load). Foundation: `Operation.isExecuting`.
    open var isExecuting: Bool {
        flags.load(ordering: .relaxed) & SQOperationFlags.executing != 0
    }

    /// Whether the operation has finished: ``main()`` returned, the ``Finisher`` was called,
    /// or it was started after being cancelled. Final: it never goes back to `false`.
    ///
    /// Asynchronous operations written in the guide's style override it and announce the
    /// change with ``didChangeValue(forKey:)`` (`"isFinished"`); that call is what releases
    /// the queue slot, the dependents and the waiters.
    /// Thread-safe; never blocks (one atomic load). Foundation: `Operation.isFinished`.
    open var isFinished: Bool {
        hasFinished
    }

    /// Whether ``cancel()`` has been called (before the operation finished).
    ///
    /// Thread-safe; never blocks (one atomic load, acquire ordering with ``cancel()``).
    /// Foundation: `Operation.isCancelled`.
    open var isCancelled: Bool {
        flags.load(ordering: .acquiring) & SQOperationFlags.cancelled != 0
    }

    /// Whether ``start()`` returns before the work is done. `false` unless overridden; by
    /// default it returns ``isConcurrent``. Queues ignore it (as Foundation's do): they always
    /// start operations on the pool and wait for ``isFinished``.
    ///
    /// Foundation: `Operation.isAsynchronous`.
    open var isAsynchronous: Bool {
        isConcurrent
    }

    /// The older name of ``isAsynchronous`` (the guide's "concurrent operation"); `false`
    /// unless overridden. Foundation: `Operation.isConcurrent`.
    open var isConcurrent: Bool {
        false
    }

    // MARK: - Running

    /// Begins the operation on the calling thread.
    ///
    /// The default implementation: if the operation was cancelled, it finishes at once without
    /// calling ``main()``; otherwise it becomes executing and calls ``main(finish:)``, whose
    /// default calls ``main()`` and then finishes. A queue calls `start()` on one of its pool
    /// threads; call it yourself only for an operation in no queue ("executing operations
    /// manually").
    ///
    /// Stops the process with a message if the operation is not ready, is executing or has
    /// finished, or is in a queue (the queue starts it). Asynchronous operations in the
    /// guide's style override it entirely (without calling `super`).
    ///
    /// Blocks for ``main()`` (and, for a synchronous operation, until it has finished, its
    /// completion block included). Foundation: `Operation.start()`.
    open func start() {
        startDefault()
    }

    /// The work of a synchronous operation. The default does nothing.
    ///
    /// Runs on the thread that called ``start()`` (a pool thread for a queued operation).
    /// Check ``isCancelled`` now and then in long work and return early if it is set.
    /// Foundation: `Operation.main()`.
    open func main() {}

    /// The work of an asynchronous operation: begin it, and call `finish()` once it is done
    /// (from any thread, exactly once; later calls do nothing). Until then the operation is
    /// executing and holds its queue slot; its dependents wait.
    ///
    /// The default calls ``main()`` and then `finish()`, which is what makes an ordinary
    /// operation synchronous. Overriding this method instead of ``start()`` needs no state
    /// of your own and no ``willChangeValue(forKey:)`` / ``didChangeValue(forKey:)`` calls:
    ///
    /// ```swift
    /// final class Download: SQOperation, @unchecked Sendable {
    ///     override func main(finish: SQOperation.Finisher) {
    ///         client.fetch(url) { data in
    ///             self.data = data
    ///             finish()
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// Not in Foundation (the safe replacement for the guide's KVO dance).
    open func main(finish: Finisher) {
        main()
        SQOperationContext.finishAsLastStep(self)
    }

    /// Asks the operation to stop: marks it cancelled, which makes it ready (its
    /// dependencies no longer hold it). It finishes without running ``main()`` when it is
    /// started (a queue starts it soon: a cancelled operation still goes through
    /// ``start()``, as with Foundation); an operation already running should check
    /// ``isCancelled``. Finished operations, and barriers of
    /// ``SQOperationQueue/addBarrierBlock(_:)``, ignore it. Dependents of a cancelled
    /// operation are not cancelled: they run once it has finished.
    ///
    /// Idempotent; thread-safe; never blocks (observers may run on the calling thread).
    /// Foundation: `Operation.cancel()`.
    open func cancel() {
        cancelDefault()
    }

    // MARK: - Dependencies

    /// Makes this operation wait until `operation` has finished. Adding the same dependency
    /// twice adds it once. `operation` may be in any queue or in none; it is kept alive (as
    /// Foundation does) until ``removeDependency(_:)``.
    ///
    /// Add dependencies before the operation starts: added to an executing or finished
    /// operation, a dependency is recorded but changes nothing. Added to a ready operation
    /// that is waiting in a queue, it holds the operation back until it finishes.
    ///
    /// O(1); thread-safe; never blocks. Foundation: `Operation.addDependency(_:)`.
    open func addDependency(_ operation: SQOperation) {
        addDependencyDefault(operation)
    }

    /// Removes a dependency added with ``addDependency(_:)``. If `operation` had not
    /// finished, this operation no longer waits for it, and is ready now if nothing else holds
    /// it (Foundation on Linux leaves it waiting for ever). Removing something that is not a
    /// dependency does nothing.
    ///
    /// O(number of dependencies + dependents of `operation`); thread-safe; never blocks.
    /// Foundation: `Operation.removeDependency(_:)`.
    open func removeDependency(_ operation: SQOperation) {
        removeDependencyDefault(operation)
    }

    /// The dependencies, in the order they were added (finished ones included).
    ///
    /// A copy; thread-safe; takes the operation lock briefly.
    /// Foundation: `Operation.dependencies`.
    open var dependencies: [SQOperation] {
        state.withLock { $0.dependencies.elements }
    }

    // MARK: - Configuration

    /// The order in which a queue starts this operation among its *ready* operations when it
    /// has no free slot: higher first, FIFO (by the time they became ready) among equals. It
    /// never lets an operation start before its dependencies finish.
    ///
    /// Thread-safe; never blocks. Changing it while the operation waits in a queue moves it to
    /// the back of its new priority. Foundation: `Operation.queuePriority`.
    open var queuePriority: QueuePriority {
        get { QueuePriority(normalizing: Int(priorityStorage.load(ordering: .relaxed))) }
        set { setQueuePriority(newValue) }
    }

    /// The quality of service the operation runs at when a queue starts it: it picks the
    /// global queue (and so the priority, see ``SQQoS``) its ``start()`` is submitted to.
    /// `.default` unless set; an operation whose QoS was never set runs at its queue's
    /// ``SQOperationQueue/qualityOfService``. Ignored when the queue has an
    /// ``SQOperationQueue/underlyingQueue``. Read when the operation is added to a queue.
    ///
    /// Thread-safe; takes the operation lock briefly. Foundation: `Operation.qualityOfService`
    /// (`QualityOfService` → ``SQQoS/QoSClass``: the same case names, plus `.unspecified`).
    open var qualityOfService: SQQoS.QoSClass {
        get { state.withLock { $0.extras?.qualityOfService ?? .default } }
        set { state.withLock { $0.makeExtras().qualityOfService = newValue } }
    }

    /// The guide's thread priority, from 0.0 to 1.0 (clamped; 0.5 unless set). Setting it sets
    /// ``qualityOfService``: below 0.25 `.background`, below 0.5 `.utility`, below 0.75
    /// `.default`, otherwise `.userInitiated`. Reading it returns the last value set.
    ///
    /// Thread-safe. Foundation: `Operation.threadPriority` (deprecated on Darwin).
    open var threadPriority: Double {
        get { state.withLock { $0.extras?.threadPriority ?? 0.5 } }
        set {
            let clamped = newValue.isNaN ? 0.5 : min(max(newValue, 0), 1)
            let qos: SQQoS.QoSClass
            switch clamped {
            case ..<0.25: qos = .background
            case ..<0.5: qos = .utility
            case ..<0.75: qos = .default
            default: qos = .userInitiated
            }
            state.withLock {
                let extras = $0.makeExtras()
                extras.threadPriority = clamped
                extras.qualityOfService = qos
            }
        }
    }

    /// A closure run exactly once when the operation finishes (also after a cancellation),
    /// then released. It runs on the thread that finishes the operation (a pool thread for a
    /// queued synchronous operation; for an asynchronous one, the thread that calls its
    /// ``Finisher`` or ``didChangeValue(forKey:)``), after ``isFinished`` has become `true`
    /// and before dependents are released, the queue lets go of the operation and
    /// ``waitUntilFinished()`` returns. Don't hold locks it needs when you finish an
    /// operation. Setting it after the operation finished does nothing useful: it never runs.
    ///
    /// Thread-safe. Foundation: `Operation.completionBlock`.
    open var completionBlock: (@Sendable () -> Void)? {
        get { state.withLock { $0.completionBlock } }
        set { state.withLock { $0.completionBlock = newValue } }
    }

    /// A name for debugging and for the messages of misuse checks. `nil` unless set.
    ///
    /// Thread-safe. Foundation: `Operation.name`.
    open var name: String? {
        get { state.withLock { $0.extras?.name } }
        set { state.withLock { $0.makeExtras().name = newValue } }
    }

    /// `SQOperation("name")` or `SQOperation(0x…)`, plus the class name of a subclass.
    ///
    /// Foundation: `NSObject.description`.
    open var description: String {
        let name = state.withLock { $0.extras?.name }
        return "<\(type(of: self)) \(name.map { "\"\($0)\"" } ?? sqAddress(self))>"
    }

    /// Whether `object` is this operation (identity); `==` calls it. Foundation:
    /// `NSObject.isEqual(_:)`.
    open func isEqual(_ object: Any?) -> Bool {
        (object as AnyObject?) === self
    }

    /// The identity's hash; `Hashable` uses it. Foundation: `NSObject.hash`.
    open var hash: Int {
        ObjectIdentifier(self).hashValue
    }

    // MARK: - Waiting

    /// Waits until the operation has finished and its completion block has run; returns at
    /// once if it has, and when called from the operation's own completion block (the
    /// operation is finished by then, as in Foundation).
    ///
    /// Blocks (a pool thread that waits hands its CPU to a spare thread). Calling it from the
    /// operation's own ``main()`` would wait for ever: that stops the process with a message.
    /// Foundation: `Operation.waitUntilFinished()`.
    open func waitUntilFinished() {
        waitUntilFinishedDefault()
    }

    // MARK: - Key-value observing compatibility

    /// Does nothing: kept so that code written for Foundation (the guide's asynchronous
    /// operations) compiles unchanged. Pair it with ``didChangeValue(forKey:)``, which does
    /// the work. Foundation: `NSObject.willChangeValue(forKey:)`.
    open func willChangeValue(forKey key: String) {}

    /// Tells the operation that state its overridden properties report has changed: it reads
    /// ``isCancelled``, ``isFinished``, ``isExecuting`` and ``isReady`` again and acts on them
    /// (any key does; the usual ones are `"isFinished"`, `"isExecuting"`, `"isReady"` and
    /// `"isCancelled"`). A newly finished operation runs its completion block, releases its
    /// dependents and its queue slot and wakes its waiters, on the calling thread; a newly
    /// ready one is offered to its queue.
    ///
    /// Thread-safe; never blocks unless the completion block or an observer does. If you
    /// override it, call `super`. Foundation: `NSObject.didChangeValue(forKey:)`.
    open func didChangeValue(forKey key: String) {
        resynchronize()
    }

    /// Accepted so that Foundation subclasses that override it compile; not consulted: every
    /// ``didChangeValue(forKey:)`` makes the operation read all its state again.
    /// Foundation: `NSObject.keyPathsForValuesAffectingValue(forKey:)`.
    open class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
        []
    }
}

/// `0x…`: an object's address, for names in messages.
extension SQOperation {
    /// Whether the operation has finished by the default bookkeeping (acquire: everything
    /// before the finish is visible), whatever an override of ``isFinished`` says.
    internal var hasFinished: Bool {
        flags.load(ordering: .acquiring) & SQOperationFlags.finished != 0
    }

    /// Sets or clears `bit` of `flags`. Call it under the operation lock (all writers hold
    /// it); the release store pairs with the acquire loads of the readers.
    internal func setFlag(_ bit: UInt8, _ on: Bool) {
        let old = flags.load(ordering: .relaxed)
        flags.store(on ? old | bit : old & ~bit, ordering: .releasing)
    }
}

/// The object's address, as Foundation's descriptions print it (`0x...`): the same figure a
/// debugger or `Unmanaged.toOpaque()` shows.
internal func sqAddress(_ object: AnyObject) -> String {
    "0x" + String(UInt(bitPattern: ObjectIdentifier(object)), radix: 16)
}

/// Operations compare and hash by identity, as `NSObject`'s `isEqual(_:)` and `hash` do for an
/// `Operation`: `Set<SQOperation>`, `==`, `firstIndex(of:)` and `operations.contains(op)`
/// port from Foundation unchanged, and so do calls of `isEqual(_:)` and `hash` themselves
/// (a port found them missing) and subclasses that override them: as for `NSObject`, `==`
/// and `Hashable` go through them.
extension SQOperation: Hashable {
    public static func == (lhs: SQOperation, rhs: SQOperation) -> Bool {
        lhs.isEqual(rhs)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
