extension SQOperationQueue {
    /// Ready operations waiting for a slot: one intrusive doubly linked FIFO per
    /// ``SQOperation/QueuePriority`` (linked through `readyPrevious` / `readyNext`), and a
    /// bit mask of the non-empty ones. Every operation is O(1). Guarded by the queue lock.
    internal struct ReadyLists {
        private var heads = [Unmanaged<SQOperation>?](repeating: nil, count: 5)
        private var tails = [Unmanaged<SQOperation>?](repeating: nil, count: 5)
        private var nonEmpty: UInt8 = 0

        var isEmpty: Bool { nonEmpty == 0 }

        /// Appends `operation` to the list of its current priority and marks it `listed`.
        mutating func append(_ operation: SQOperation) {
            let list = operation.storedPriorityList
            let link = Unmanaged.passUnretained(operation)
            operation.readyList = UInt8(list)
            operation.readyNext = nil
            operation.readyPrevious = tails[list]
            if let tail = tails[list] {
                tail._withUnsafeGuaranteedRef { $0.readyNext = link }
            } else {
                heads[list] = link
                nonEmpty |= 1 << list
            }
            tails[list] = link
            operation.queueState = .listed
        }

        /// Puts `operation` at the front of the list of its priority (it was next, and gives
        /// its turn back) and marks it `listed`.
        mutating func prepend(_ operation: SQOperation) {
            let list = operation.storedPriorityList
            let link = Unmanaged.passUnretained(operation)
            operation.readyList = UInt8(list)
            operation.readyPrevious = nil
            operation.readyNext = heads[list]
            if let head = heads[list] {
                head._withUnsafeGuaranteedRef { $0.readyPrevious = link }
            } else {
                tails[list] = link
                nonEmpty |= 1 << list
            }
            heads[list] = link
            operation.queueState = .listed
        }

        /// Takes `operation` (which must be `listed`) out of its list. The caller sets its
        /// new state.
        mutating func remove(_ operation: SQOperation) {
            let list = Int(operation.readyList)
            let previous = operation.readyPrevious
            let next = operation.readyNext
            if let previous {
                previous._withUnsafeGuaranteedRef { $0.readyNext = next }
            } else {
                heads[list] = next
            }
            if let next {
                next._withUnsafeGuaranteedRef { $0.readyPrevious = previous }
            } else {
                tails[list] = previous
            }
            if heads[list] == nil {
                nonEmpty &= ~(1 << list)
            }
            operation.readyPrevious = nil
            operation.readyNext = nil
        }

        /// Takes the first operation of the highest non-empty priority, or nil.
        mutating func popHighest() -> Unmanaged<SQOperation>? {
            guard nonEmpty != 0 else { return nil }
            let list = 7 - nonEmpty.leadingZeroBitCount
            let head = heads[list].unsafelyUnwrapped
            head._withUnsafeGuaranteedRef { remove($0) }
            return head
        }
    }
}
