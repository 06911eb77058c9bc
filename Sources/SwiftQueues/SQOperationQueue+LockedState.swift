extension SQOperationQueue {
    /// What the queue lock guards. Operations' queue-side fields (`queueState`, the links)
    /// are guarded by it too.
    internal struct LockedState {
        /// The FIFO of all operations in the queue, linked through `queuePrevious` /
        /// `queueNext`. The queue holds one strong reference (taken with `Unmanaged`) to each.
        var first: Unmanaged<SQOperation>?
        var last: Unmanaged<SQOperation>?
        /// Ready operations waiting for a slot.
        var ready = ReadyLists()
        /// Operations in the queue.
        var count = 0
        /// Operations holding a slot (state `dispatched`).
        var running = 0
        /// `maxConcurrent` as a limit on `running` (`Int.max` for -1).
        var limit = Int.max
        var maxConcurrent = SQOperationQueue.defaultMaxConcurrentOperationCount
        var suspended = false
        /// The next operation's `queueSequence`.
        var nextSequence: UInt64 = 0
        /// Barriers not yet finished, oldest first.
        var barriers = BarrierGates()
        /// Threads in `waitUntilAllOperationsAreFinished`, and async waiters.
        var idleWaiters: [SQSemaphore] = []
        var idleContinuations: [CheckedContinuation<Void, Never>] = []
        var underlying: SQQueue?
        var qualityOfService: SQQoS.QoSClass = .default
        var name: String?
        var observers: SQOperationObservers<StateChange>?
        /// Finished operations the queue made for itself, whose queue reference the next
        /// adding thread releases (see `SQOperationQueue+Retired.swift`), linked through
        /// `dispatchNext`; and how many.
        var retired: Unmanaged<SQOperation>?
        var retiredCount = 0

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
            operation._withUnsafeGuaranteedRef { operation in
                operation.queueState = .dispatched
                operation.dispatchNext = nil
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
