extension SQOperationQueue.LockedState {
    /// Barrier bookkeeping for an operation leaving the queue: every pending barrier added
    /// after it has one fewer operation to wait for (and is listed when none is left); a
    /// barrier that leaves lets the operations it held back go.
    mutating func operationRemoved(_ operation: SQOperation) {
        guard !barriers.isEmpty else { return }
        var index = barriers.count - 1
        while index >= 0 && barriers[index].sequence > operation.queueSequence {
            barriers[index].before -= 1
            if barriers[index].before == 0 {
                let barrier = barriers[index].barrier
                if barrier.queueState == .gated {
                    ready.append(barrier)
                }
            }
            index -= 1
        }
        guard operation.isQueueBarrier,
            let position = barriers.firstIndex(where: { $0.barrier === operation })
        else { return }
        let gate = barriers.remove(at: position)
        // Operations held back by this barrier belong, from now on, to the barrier before it
        // if one is still pending (a barrier finished early); normally there is none.
        if position > 0 {
            barriers[position - 1].held.append(contentsOf: gate.held)
            return
        }
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
    }
}
