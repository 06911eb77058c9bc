/// The parts of an operation's locked state that most operations never use, allocated on
/// first use so that a plain operation stays small. Guarded by the operation lock. Not public
/// API.
internal final class SQOperationExtras {
    var name: String?
    /// Set explicitly (by ``SQOperation/qualityOfService`` or ``SQOperation/threadPriority``);
    /// nil means "the queue's".
    var qualityOfService: SQQoS.QoSClass?
    var threadPriority: Double = 0.5
    /// Threads in ``SQOperation/waitUntilFinished()`` and async waiters.
    var waiters: [SQSemaphore] = []
    var continuations: [CheckedContinuation<Void, Never>] = []
    /// The dependencies' identities, once there are many (duplicate checks stay O(1)).
    var dependencyIdentities: Set<ObjectIdentifier>?
    /// Created on the first observation.
    var observers: SQOperationObservers<SQOperation.StateChange>?

    init() {}

    /// The operation is being freed: its `stateChanges` streams end (an operation freed
    /// before it finished, such as one cancelled in no queue, never sends `finished`).
    deinit {
        observers?.closeAll()
    }
}
