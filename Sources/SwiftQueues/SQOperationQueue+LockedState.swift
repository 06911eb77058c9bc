extension SQOperationQueue {
    /// What the queue lock guards. Operations' queue-side fields (`queueState`, the links)
    /// are guarded by it too.
    internal struct LockedState {
        // The fields are laid out by who writes them (the lock's allocation is aligned to a
        // cache line, and the mutex takes its first 40 bytes): both the adding thread and the
        // finishing pool thread write line 0 for every operation, and with the mutex there it
        // is the only line they hand back and forth; line 1 is written by the finishing
        // thread, line 2 is read by both and written rarely, line 3 by the adding thread. Laid
        // out in declaration order, every line of the state was written by both for each
        // operation: 4-5 cache misses a side, where the two CPUs share no cache ~200 ns each
        // (`op_add`). `testLockedStateLayout` checks the offsets.

        // Line 0, after the mutex.
        /// Operations in the queue.
        var storedCount: Int32 = 0
        /// Operations holding a slot (state `dispatched`).
        var storedRunning: Int32 = 0
        /// How many operations `retired` holds.
        var storedRetiredCount: Int32 = 0
        /// Finished operations the queue made for itself, whose queue reference the next
        /// adding thread releases (see `SQOperationQueue+Retired.swift`), linked through
        /// `dispatchNext`.
        var retired: Unmanaged<SQOperation>?

        // Line 1.
        /// The FIFO of all operations in the queue, linked through `queuePrevious` /
        /// `queueNext`. The queue holds one strong reference (taken with `Unmanaged`) to each.
        var first: Unmanaged<SQOperation>?
        /// Threads in `waitUntilAllOperationsAreFinished`, and async waiters.
        var idleWaiters: [SQSemaphore] = []
        var idleContinuations: [CheckedContinuation<Void, Never>] = []
        private var pad1: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)

        // Line 2.
        /// Ready operations waiting for a slot.
        var ready = ReadyLists()
        var suspended = false
        /// `maxConcurrent` as a limit on `running` (`Int.max` for -1).
        var limit = Int.max
        /// Barriers not yet finished, oldest first.
        var barriers = BarrierGates()
        var observers: SQOperationObservers<StateChange>?

        // Line 3.
        var last: Unmanaged<SQOperation>?
        /// The next operation's `queueSequence`.
        var nextSequence: UInt64 = 0
        var underlying: SQQueue?
        var maxConcurrent = SQOperationQueue.defaultMaxConcurrentOperationCount
        var qualityOfService: SQQoS.QoSClass = .default
        var name: String?

        /// Operations in the queue.
        var count: Int {
            get { Int(storedCount) }
            set { storedCount = Int32(newValue) }
        }
        /// Operations holding a slot (state `dispatched`).
        var running: Int {
            get { Int(storedRunning) }
            set { storedRunning = Int32(newValue) }
        }
        /// How many operations `retired` holds.
        var retiredCount: Int {
            get { Int(storedRetiredCount) }
            set { storedRetiredCount = Int32(newValue) }
        }

        /// Links `operation` at the end of the FIFO of all operations.
        mutating func link(_ operation: SQOperation) {
            let link = Unmanaged.passUnretained(operation)
            operation.queuePrevious = last
            operation.queueNext = nil
            if let last {
                last._withUnsafeGuaranteedRef { $0.queueNext = link }
            } else {
                first = link
            }
            last = link
            count += 1
        }

        /// Unlinks `operation` from the FIFO of all operations.
        mutating func unlink(_ operation: SQOperation) {
            let previous = operation.queuePrevious
            let next = operation.queueNext
            if let previous {
                previous._withUnsafeGuaranteedRef { $0.queueNext = next }
            } else {
                first = next
            }
            if let next {
                next._withUnsafeGuaranteedRef { $0.queuePrevious = previous }
            } else {
                last = previous
            }
            operation.queuePrevious = nil
            operation.queueNext = nil
            count -= 1
        }

        /// The operations, in FIFO order (strong references).
        func snapshot() -> [SQOperation] {
            var operations: [SQOperation] = []
            operations.reserveCapacity(count)
            var cursor = first
            while let link = cursor {
                let operation = link.takeUnretainedValue()
                operations.append(operation)
                cursor = operation.queueNext
            }
            return operations
        }

        /// Whether `operation` (ready) may take a slot at once, bypassing the ready lists:
        /// the queue runs, has a free slot, and no other operation waits for one.
        func canStartAtOnce() -> Bool {
            !suspended && running < limit && ready.isEmpty
        }

        /// Gives `operation` a slot and appends it to the chain `head` / `tail` of operations
        /// to submit (see ``takeStartable()``).
        mutating func take(
            _ operation: Unmanaged<SQOperation>,
            into head: inout Unmanaged<SQOperation>?,
            tail: inout Unmanaged<SQOperation>?
        ) {
            running += 1
            // The submission's reference, consumed by sqStartQueuedOperation.
            _ = operation.retain()
            // A queue of width 1 runs one operation at a time, as Foundation's does on a
            // serial dispatch queue, which gets a thread while CPU-bound work holds every
            // worker: its operations overcommit as a serial queue's drain does. On the
            // global queue they waited for that work to end (20 s behind spinning tasks;
            // Foundation: at once).
            let overcommits = limit == 1 && underlying == nil
            operation._withUnsafeGuaranteedRef { operation in
                operation.queueState = .dispatched
                operation.dispatchNext = nil
                operation.queueOvercommits = overcommits
            }
            if let tail {
                tail._withUnsafeGuaranteedRef { $0.dispatchNext = operation }
            } else {
                head = operation
            }
            tail = operation
        }

        /// Takes slots for ready operations while the queue runs and has free slots, highest
        /// priority first; returns them linked through `dispatchNext`, each retained once for
        /// its submission (see ``SQOperationQueue/submit(_:)``).
        mutating func takeStartable() -> Unmanaged<SQOperation>? {
            guard !suspended else { return nil }
            var head: Unmanaged<SQOperation>?
            var tail: Unmanaged<SQOperation>?
            while running < limit, let operation = ready.popHighest() {
                take(operation, into: &head, tail: &tail)
            }
            return head
        }

        /// Queues a change for the queue's observers, if any; if the caller must deliver,
        /// stores the hub in `deliverer`.
        mutating func publish(
            _ change: StateChange,
            to deliverer: inout SQOperationObservers<StateChange>?
        ) {
            if let observers, observers.enqueue(change) {
                deliverer = observers
            }
        }
    }
}
