extension SQOperation {
    /// The default ``cancel()``.
    internal func cancelDefault() {
        if isQueueBarrier {
            return
        }
        var deliverer: SQOperationObservers<StateChange>?
        var queue: SQOperationQueue?
        let cancelled = state.withLock { state in
            if state.cancelled || state.phase == .finished {
                return false
            }
            state.cancelled = true
            // Pairs with the acquire loads of isCancelled and isReady: a cancelled operation is
            // ready whatever its dependencies.
            setFlag(SQOperationFlags.cancelled | SQOperationFlags.baseReady, true)
            // Pairs with the acquire load on the queue's start path (see readySequence).
            readySequence.wrappingAdd(1, ordering: .acquiringAndReleasing)
            state.publish(.cancelled, to: &deliverer)
            if !state.reportedReady {
                state.reportedReady = true
                state.publish(.ready, to: &deliverer)
            }
            if state.phase == .pending {
                queue = state.queueReference()
            }
            return true
        }
        deliverer?.deliver()
        if cancelled {
            queue?.operationBecameReady(self)
        }
    }
}
