extension SQOperationQueue {
    /// Calls `handler` with every change of this queue from now on, in the order the changes
    /// happened, until the returned observation is invalidated or dropped.
    ///
    /// The handler runs on the thread that made the change, or on one delivering earlier
    /// changes of this queue (a thread that has delivered 256 changes in one go passes the
    /// rest to a pool thread), with no lock held; handlers of one queue never run
    /// concurrently. Don't block in it: the thread may be one that adds operations to this
    /// queue (a handler waiting there for an operation not added yet would wait for ever).
    /// No other operation waits for the handler to return: the next operation a finish frees
    /// starts on another thread while the handler runs. While a queue is observed, starting
    /// an operation takes the queue lock once more (to order its `started` change).
    ///
    /// Thread-safe; never blocks. Not in Foundation (Darwin: KVO on the queue's properties).
    public func observeStateChanges(
        _ handler: @escaping @Sendable (StateChange) -> Void
    ) -> SQOperationObservation {
        let observers = observerHub()
        let id = observers.add(handler)
        return SQOperationObservation { observers.remove(id) }
    }

    /// The changes of this queue from the moment this property is read, as an `AsyncStream`
    /// that buffers every change (none is missed). It ends when the queue is freed, or when
    /// the consumer stops iterating.
    ///
    /// Thread-safe; never blocks. Not in Foundation.
    public var stateChanges: AsyncStream<StateChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: StateChange.self, bufferingPolicy: .unbounded)
        let observers = observerHub()
        let id = observers.add(
            { change in continuation.yield(change) }, close: { continuation.finish() })
        continuation.onTermination = { _ in observers.remove(id) }
        return stream
    }

    /// Publishes `started` for an operation, under the queue lock (so that it is ordered
    /// with the operation's `added` and `finished`).
    internal func publishStarted(_ operation: SQOperation) {
        var deliverer: SQOperationObservers<StateChange>?
        state.withLock { state in
            state.publish(.started(operation), to: &deliverer)
        }
        deliverer?.deliver()
    }

    /// The queue's observer hub, created on first use.
    internal func observerHub() -> SQOperationObservers<StateChange> {
        state.withLock { state in
            if let observers = state.observers {
                return observers
            }
            let observers = SQOperationObservers<StateChange>()
            state.observers = observers
            // Pairs with the acquire load on the start path.
            observedFlag.store(true, ordering: .releasing)
            return observers
        }
    }
}
