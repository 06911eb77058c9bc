import CQueueCore

/// The C function of every queued operation's submission: consumes the reference that
/// `takeStartable` took and starts the operation.
internal let sqStartQueuedOperation: cq_function_t = { context in
    // safety: `context` is an operation retained once by takeStartable for this submission;
    // the C core calls each submitted function exactly once.
    SQOperationQueue.startSubmitted(Unmanaged<SQOperation>.fromOpaque(context.unsafelyUnwrapped))
}

extension SQOperationQueue {
    /// How many operations one pool work item may start one after the other through
    /// hand-offs (see ``SQOperationContext``) before it submits the next one to the pool
    /// like any other: a bound on how long a chain keeps a worker from other work.
    internal static let handOffBudget = 1024

    /// Runs on a pool thread for an operation holding a slot, then for each operation handed
    /// off to it (see ``SQOperationContext/handOff``). Consumes the submission's reference to
    /// `operation` (and to each operation handed off), released once its start path is done.
    internal static func startSubmitted(_ operation: Unmanaged<SQOperation>) {
        SQOperationContext.run(operation) { context in
            var next: Unmanaged<SQOperation>? = operation
            var first = true
            while let current = next {
                if !first {
                    // The pool counted this work item as a task as it started; each operation
                    // handed on to it counts as one more, as it starts (SQRuntime.counters
                    // .tasksRun counts operations, whether each came in a work item of its
                    // own or not; counted at the end of the item, a reader woken by the last
                    // operation's finish missed the item's count).
                    cq_swift_count_tasks(1)
                }
                first = false
                // safety: `current` carries the submission's reference until the release
                // below; the context's unowned pointer is not read after it (the next
                // iteration sets it first, and `run` then restores the previous context).
                current._withUnsafeGuaranteedRef { operation in
                    context.pointee.operation = operation
                    startOne(operation)
                }
                next = context.pointee.handOff
                context.pointee.handOff = nil
                context.pointee.budget -= 1
                current.release()
            }
        }
    }

    /// Checks that the queue still runs and that the operation is ready, then calls its
    /// ``SQOperation/start()``.
    private static func startOne(_ operation: SQOperation) {
        // safety: the operation is in the queue (it holds a slot), and a queue that holds
        // operations keeps itself alive; used only until start() is called (the operation
        // may finish, and the queue go, at any point after that).
        unowned(unsafe) let queue = operation.owningQueue.unsafelyUnwrapped.takeUnretainedValue()
        if queue.suspendedFlag.load(ordering: .relaxed) {
            queue.giveBack(operation)
            return
        }
        // Pairs with the release store in finishOperation: an operation that finished before
        // it was started (its overridden isFinished announced it) has already given its slot
        // back.
        if operation.hasFinished {
            return
        }
        // Loaded before isReady is asked (see SQOperation.readySequence and park).
        let seen = operation.readySequence.load(ordering: .acquiring)
        guard operation.isReady else {
            queue.park(operation, seen: seen)
            return
        }
        if queue.observedFlag.load(ordering: .acquiring) {
            queue.publishStarted(operation)
        }
        if type(of: operation) != SQBlockOperation.self {
            // An override of start() may call super.start() later, on another thread.
            operation.state.withLock { $0.startCalledByQueue = true }
        }
        operation.start()
        // An operation that overrides start() and isFinished but announced nothing.
        if !operation.hasFinished && operation.isFinished {
            operation.finishOperation()
        }
    }
}
