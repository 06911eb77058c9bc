extension SQOperationQueue.LockedState {
    /// Bookkeeping for barriers when `operation` leaves the queue: opens the oldest barrier
    /// once everything before it has gone, and releases what a finished barrier held back.
    /// O(log pending barriers) per operation (see ``SQOperationQueue/BarrierGates``).
    mutating func operationRemoved(_ operation: SQOperation) {
        guard !barriers.isEmpty else { return }
        guard operation.isQueueBarrier else {
            if barriers.operationRemoved(sequence: operation.queueSequence) {
                openOldestBarrier()
            }
            return
        }
        guard let (gate, wasOldest) = barriers.remove(operation), wasOldest else { return }
        for held in gate.held where held.queueState == .gated {
            // Pairs with the release stores of the operation's readiness: an operation that
            // became ready before this load is seen ready; one that becomes ready later is
            // found `waiting` by operationBecameReady.
            if held.flags.load(ordering: .acquiring) & SQOperationFlags.baseReady != 0 {
                ready.append(held)
            } else {
                held.queueState = .waiting
            }
        }
        if !barriers.isEmpty && barriers.oldest.segment == 0 {
            openOldestBarrier()
        }
    }

    /// The oldest barrier has nothing left before it: it becomes ready.
    private mutating func openOldestBarrier() {
        let barrier = barriers.oldest.barrier
        if barrier.queueState == .gated {
            ready.append(barrier)
        }
    }
}
