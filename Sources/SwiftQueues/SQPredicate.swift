import CQueueCore

/// A condition about the queue the caller is running on, checked by
/// ``sqPrecondition(_:file:line:)``.
///
/// "Running on a queue" means: inside a work item of that queue, of a queue that targets it, or
/// inside a `sync` onto it. Dispatch: `DispatchPredicate`.
public enum SQPredicate: Sendable {
    /// The caller is running on the queue.
    case onQueue(SQQueue)
    /// The caller is running on the queue exclusively: a work item of a serial queue, a
    /// ``SQWorkItemFlags/barrier`` item of a concurrent one, or inside a `sync` (or barrier
    /// `sync`) that holds it alone. A plain item of a concurrent queue does not qualify; an
    /// item of a queue that targets a serial queue does, as in Dispatch (the serial queue runs
    /// it alone).
    case onQueueAsBarrier(SQQueue)
    /// The caller is not running on the queue.
    case notOnQueue(SQQueue)
}

/// Checks `condition` and, if it does not hold, stops the process with a message naming the
/// queue, the queue the caller runs on, and `file`:`line` (in every build configuration, as
/// `dispatchPrecondition` does).
///
/// Thread-safe; never blocks; takes no lock (it reads only the calling thread's state).
/// Dispatch: `dispatchPrecondition(condition:file:line:)`.
public func sqPrecondition(
    _ condition: @autoclosure () -> SQPredicate,
    file: StaticString = #file,
    line: UInt = #line
) {
    switch condition() {
    case .onQueue(let queue):
        if !cq_queue_is_current(queue.handle) {
            sqPreconditionFailure(
                ".onQueue",
                "expected to run on \(sqDescribe(queue)), but running on \(sqCurrent())",
                file: file, line: line)
        }
    case .onQueueAsBarrier(let queue):
        if !cq_queue_is_current_barrier(queue.handle) {
            let alongside = cq_queue_is_current(queue.handle) ? " (alongside other work of it)" : ""
            sqPreconditionFailure(
                ".onQueueAsBarrier",
                "expected to run on \(sqDescribe(queue)) exclusively, but running on "
                    + "\(sqCurrent())\(alongside)",
                file: file, line: line)
        }
    case .notOnQueue(let queue):
        if cq_queue_is_current(queue.handle) {
            sqPreconditionFailure(
                ".notOnQueue", "running on \(sqDescribe(queue))", file: file, line: line)
        }
    }
}

/// ``sqPrecondition(_:file:line:)`` with Dispatch's argument label, so ported code only changes
/// the function name. Dispatch: `dispatchPrecondition(condition:file:line:)`.
public func sqPrecondition(
    condition: @autoclosure () -> SQPredicate,
    file: StaticString = #file,
    line: UInt = #line
) {
    sqPrecondition(condition(), file: file, line: line)
}

/// Stops the process for a failed ``sqPrecondition(_:file:line:)`` with Swift's usual
/// "file:line: Fatal error: sqPrecondition(.onQueue): ..." message.
private func sqPreconditionFailure(
    _ predicate: String,
    _ message: String,
    file: StaticString,
    line: UInt
) -> Never {
    fatalError("sqPrecondition(\(predicate)): \(message)", file: file, line: line)
}

/// `queue "label"`, for messages.
private func sqDescribe(_ queue: SQQueue) -> String {
    "queue \"\(queue.label)\""
}

/// The innermost queue the caller runs on, for messages: `queue "label"` or `no queue`.
private func sqCurrent() -> String {
    guard let current = cq_get_current_queue() else {
        return "no queue"
    }
    return "queue \"\(String(cString: cq_queue_get_label(current)))\""
}
