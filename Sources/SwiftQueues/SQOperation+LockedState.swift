extension SQOperation.LockedState {
    /// Queues `change` for the operation's observers, if it has any; if the caller must then
    /// deliver, stores the hub in `deliverer`. Call it under the operation lock, and call
    /// `deliverer?.deliver()` after dropping it.
    mutating func publish(
        _ change: SQOperation.StateChange,
        to deliverer: inout SQOperationObservers<SQOperation.StateChange>?
    ) {
        if let observers, observers.enqueue(change) {
            deliverer = observers
        }
    }
}

extension SQOperation.LockedState {
    /// A strong reference to the operation's queue, for use after the lock is dropped. Safe
    /// under the operation lock: the operation's finish clears the field, under this lock,
    /// before the queue lets the operation go (and so before it can be freed).
    func queueReference() -> SQOperationQueue? {
        queue?.takeUnretainedValue()
    }
}

/// How misuse ends: a message naming the culprit, in every build configuration.
internal func sqOperationMisuse(_ message: String) -> Never {
    fatalError(message)
}
