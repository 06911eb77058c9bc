/// Where an operation is in its life cycle, as the operation itself records it (an
/// asynchronous operation in the guide's style reports its own states through overridden
/// properties; this records what the default implementation and the KVO calls established).
/// Stored under the operation lock. Not public API.
internal enum SQOperationPhase: UInt8 {
    /// Not started yet (the default ``SQOperation/start()`` has not run, or the operation
    /// manages its own executing state).
    case pending
    /// The default ``SQOperation/start()`` is running ``SQOperation/main(finish:)`` and the
    /// ``SQOperation/Finisher`` has not been called.
    case executing
    /// Finished: the completion block, dependents, queue and waiters are being (or have been)
    /// released. Final.
    case finished
}
