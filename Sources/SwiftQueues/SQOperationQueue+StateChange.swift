extension SQOperationQueue {
    /// A change of a queue's state, as reported by ``SQOperationQueue/observeStateChanges(_:)``
    /// and ``SQOperationQueue/stateChanges``: what KVO notifications of `operations`,
    /// `operationCount`, `isSuspended` and `maxConcurrentOperationCount` tell on Darwin, plus
    /// the start of each operation.
    ///
    /// Changes are reported in the order they happened: for each operation, `added`, then
    /// (unless it was never started) `started`, then `finished`.
    ///
    /// Thread-safe. Not in Foundation (which reports these through KVO).
    public enum StateChange: Sendable {
        /// An operation was added.
        case added(SQOperation)
        /// The queue is about to call the operation's ``SQOperation/start()``.
        case started(SQOperation)
        /// The operation finished and left the queue.
        case finished(SQOperation)
        /// ``SQOperationQueue/isSuspended`` changed.
        case suspensionChanged(isSuspended: Bool)
        /// ``SQOperationQueue/maxConcurrentOperationCount`` changed.
        case maxConcurrentOperationCountChanged(Int)
    }
}
