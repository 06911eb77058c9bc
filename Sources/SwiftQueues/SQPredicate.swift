import CQueueCore

/// A condition about the queue the caller is running on, checked by ``sqPrecondition(_:)``.
///
/// "Running on a queue" means: inside a work item of that queue, of a queue that targets it, or
/// inside a `sync` onto it. Dispatch: `DispatchPredicate` (there is no `.onQueueAsBarrier`).
public enum SQPredicate: Sendable {
    /// The caller is running on the queue.
    case onQueue(SQQueue)
    /// The caller is not running on the queue.
    case notOnQueue(SQQueue)
}

/// Checks `condition` and, if it does not hold, stops the process with a message naming the
/// queue (in every build configuration, as `dispatchPrecondition` does).
///
/// Thread-safe; never blocks; takes no lock. Dispatch: `dispatchPrecondition(condition:)`.
public func sqPrecondition(_ condition: @autoclosure () -> SQPredicate) {
    switch condition() {
    case .onQueue(let queue):
        cq_assert_queue(queue.handle)
    case .notOnQueue(let queue):
        cq_assert_queue_not(queue.handle)
    }
}

/// ``sqPrecondition(_:)`` with Dispatch's argument label, so ported code only changes the
/// function name. Dispatch: `dispatchPrecondition(condition:)`.
public func sqPrecondition(condition: @autoclosure () -> SQPredicate) {
    sqPrecondition(condition())
}
