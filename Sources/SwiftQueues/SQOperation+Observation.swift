extension SQOperation {
    /// Calls `handler` with every state change of this operation from now on, in the order
    /// the changes happened, until the returned observation is invalidated or dropped.
    ///
    /// The handler runs on the thread that made the change, or on one delivering earlier
    /// changes of this operation, after the change, with no lock held; handlers of one
    /// operation never run concurrently. A change the handler causes is delivered after it
    /// returns. Don't block in it: the thread may be one that adds operations to a queue, or
    /// finishes this operation. From ``StateChange/finished``, ``waitUntilFinished()`` on this
    /// operation returns at once, as from its completion block; no other operation waits for
    /// the handler to return.
    ///
    /// Thread-safe; never blocks. Not in Foundation (Darwin: KVO on `isReady`, `isExecuting`,
    /// `isFinished`, `isCancelled`).
    public func observeStateChanges(
        _ handler: @escaping @Sendable (StateChange) -> Void
    ) -> SQOperationObservation {
        let observers = observerHub()
        let id = observers.add(handler)
        return SQOperationObservation { observers.remove(id) }
    }

    /// The state changes of this operation from the moment this property is read, as an
    /// `AsyncStream` that buffers every change (none is missed, however slowly it is read)
    /// and ends after ``StateChange/finished``, or when the operation is freed without
    /// finishing (one cancelled and never started). Read on an operation that has already
    /// finished, it yields only ``StateChange/finished``.
    ///
    /// Thread-safe; never blocks. Not in Foundation.
    public var stateChanges: AsyncStream<StateChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: StateChange.self, bufferingPolicy: .unbounded)
        let observers = observerHub()
        let id = observers.add(
            { change in
                continuation.yield(change)
                if change == .finished {
                    continuation.finish()
                }
            }, close: { continuation.finish() })
        continuation.onTermination = { _ in observers.remove(id) }
        // Registered first, then checked: if the operation had not finished by now, its
        // `finished` change is enqueued after the registration and will be delivered.
        if hasFinished {
            continuation.yield(.finished)
            continuation.finish()
        }
        return stream
    }

    /// The operation's observer hub, created on first use.
    internal func observerHub() -> SQOperationObservers<StateChange> {
        state.withLock { state in
            let extras = state.makeExtras()
            if let observers = extras.observers {
                return observers
            }
            let observers = SQOperationObservers<StateChange>()
            extras.observers = observers
            return observers
        }
    }
}
