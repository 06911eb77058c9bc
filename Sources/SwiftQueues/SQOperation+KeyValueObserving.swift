extension SQOperation {
    /// What every `didChangeValue` does: reads the (possibly overridden) state properties and
    /// brings the operation, its observers and its queue up to date. Called with no lock held.
    internal func resynchronize() {
        if isCancelled && flags.load(ordering: .acquiring) & SQOperationFlags.cancelled == 0 {
            cancelDefault()
        }
        if isFinished {
            finishOperation()
            return
        }
        if isExecuting {
            reportExecuting()
        }
        let ready = isReady
        var deliverer: SQOperationObservers<StateChange>?
        var queue: SQOperationQueue?
        state.withLock { state in
            guard state.phase != .finished else { return }
            // Pairs with the acquire load on the queue's start path (see readySequence).
            readySequence.wrappingAdd(1, ordering: .acquiringAndReleasing)
            if ready != state.reportedReady {
                state.reportedReady = ready
                state.publish(ready ? .ready : .notReady, to: &deliverer)
            }
            queue = state.queueReference()
        }
        deliverer?.deliver()
        if ready {
            queue?.operationBecameReady(self)
        }
    }
}
