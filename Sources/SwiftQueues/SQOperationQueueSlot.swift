/// Where an operation stands inside its ``SQOperationQueue``. Stored in the operation, read and
/// written only under the queue lock. Not public API.
internal enum SQOperationQueueSlot: UInt8 {
    /// In no queue (or claimed by `enqueue`, not yet linked).
    case none
    /// Claimed by `enqueue`, not yet linked, and already reported ready (by a dependency
    /// finishing or a cancellation in between).
    case readyWhileAdding
    /// Claimed by `enqueue` and finished (by another thread) before it was linked: linked
    /// nonetheless, never listed, held back or given a slot, and removed at once by the adding
    /// thread (see `admitClaimed`).
    case finishedWhileAdding
    /// In the queue, not ready: the queue waits to be told it became ready.
    case waiting
    /// Held back by a pending barrier (``SQOperationQueue/addBarrierBlock(_:)``), or a barrier
    /// waiting for the operations before it.
    case gated
    /// Ready, in a ready list, waiting for a free slot.
    case listed
    /// Holds a slot: submitted to the pool, starting, executing or finishing.
    case dispatched
    /// Finished and removed from the queue. Final.
    case removed
}
