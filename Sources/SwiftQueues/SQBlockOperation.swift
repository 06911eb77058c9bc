/// An operation that runs one or more closures: SwiftQueues' Foundation `BlockOperation`.
///
/// The closures (the *execution blocks*) run concurrently on the thread pool when the
/// operation starts: the first on the thread running ``SQOperation/start()``, each other one
/// as a work item on the global queue of the operation's ``SQOperation/qualityOfService`` (or
/// its queue's, if it has none of its own), as Apple documents for `BlockOperation`: also
/// when the operation's queue is ``SQOperationQueue/main`` or has a serial
/// ``SQOperationQueue/underlyingQueue`` (only the first block runs there; give an operation
/// that must stay on that queue one block).
/// The operation finishes when all of them have returned (Foundation on Linux runs them one
/// after another). Cancelled before it starts, it runs none of them.
///
/// The guide's `NSInvocationOperation` has no Swift counterpart: a block operation whose
/// closure calls the method is the equivalent, `SQBlockOperation { worker.process(data) }`.
///
/// Thread-safety: as ``SQOperation``. Adding a block after the operation started stops the
/// process with a message. The blocks are kept (``executionBlocks``) as long as the operation,
/// except in the operations a queue makes for itself
/// (``SQOperationQueue/addOperation(_:)-(()->Void)``, ``SQOperationQueue/addBarrierBlock(_:)``):
/// those let their block go when they finish, on the thread that finished them.
///
/// Porting from Foundation: `BlockOperation` → `SQBlockOperation`; the member names are the
/// same.
open class SQBlockOperation: SQOperation, @unchecked Sendable {
    /// The first block; set before the operation is shared, or under the operation lock
    /// before it starts; read after it started (the start took the lock, ordering the read).
    @exclusivity(unchecked)
    private var firstBlock: (@Sendable () -> Void)?

    /// The other blocks; same rules as `firstBlock`.
    @exclusivity(unchecked)
    private var otherBlocks: [@Sendable () -> Void] = []

    /// An operation with no blocks yet (add them with ``addExecutionBlock(_:)``).
    ///
    /// Foundation: `BlockOperation()`.
    public override init() {
        super.init()
    }

    /// An operation with one block.
    ///
    /// One allocation for the operation (plus the closure's context, if it captures).
    /// Foundation: `BlockOperation(block:)`.
    public init(block: @escaping @Sendable () -> Void) {
        firstBlock = block
        super.init()
    }

    /// An operation with one block, created by `queue` for itself (see
    /// ``SQOperation/init(claimedBy:)``).
    internal init(
        block: @escaping @Sendable () -> Void, claimedBy queue: Unmanaged<SQOperationQueue>
    ) {
        firstBlock = block
        super.init(claimedBy: queue)
    }

    /// Takes the blocks out of the operation, for the caller to release (see
    /// ``SQOperation/isQueueMade``). Called under the operation lock, after the blocks ran.
    internal func takeBlocks() -> (first: (@Sendable () -> Void)?, others: [@Sendable () -> Void]) {
        let taken = (first: firstBlock, others: otherBlocks)
        firstBlock = nil
        otherBlocks = []
        return taken
    }

    /// Adds a block. Stops the process with a message if the operation has started (is
    /// executing or has finished).
    ///
    /// Thread-safe; never blocks. Foundation: `BlockOperation.addExecutionBlock(_:)`.
    open func addExecutionBlock(_ block: @escaping @Sendable () -> Void) {
        let phase: SQOperationPhase = state.withLock { state in
            guard state.phase == .pending else { return state.phase }
            if firstBlock == nil {
                firstBlock = block
            } else {
                otherBlocks.append(block)
            }
            return .pending
        }
        if phase != .pending {
            sqOperationMisuse(
                "SQBlockOperation.addExecutionBlock(_:): \(self) has already "
                    + (phase == .finished ? "finished" : "started")
                    + "; add blocks before it starts")
        }
    }

    /// The blocks, in the order they were added.
    ///
    /// A copy; thread-safe. Foundation: `BlockOperation.executionBlocks`.
    open var executionBlocks: [@Sendable () -> Void] {
        state.withLock { _ in
            (firstBlock.map { [$0] } ?? []) + otherBlocks
        }
    }

    /// Runs the blocks concurrently and returns when all have returned.
    ///
    /// Blocks the calling thread until then (a pool thread that waits for the other blocks
    /// first runs those not yet taken, then hands its CPU to a spare thread).
    /// Foundation: `BlockOperation.main()`.
    open override func main() {
        guard let first = firstBlock else { return }
        if otherBlocks.isEmpty {
            first()
            return
        }
        let group = SQGroup()
        let queue = SQQueue.global(qos: queueQoS ?? qualityOfService)
        // Each block runs in the operation's context, as the first one does, wherever it
        // runs: SQOperationQueue.current names the operation's queue in all of them.
        // safety: the operation is alive until the group wait below returns.
        let operation = Unmanaged<SQOperation>.passUnretained(self)
        for block in otherBlocks {
            queue.async(group: group) {
                SQOperationContext.run(operation) { _ in block() }
            }
        }
        first()
        group.wait()
    }
}
