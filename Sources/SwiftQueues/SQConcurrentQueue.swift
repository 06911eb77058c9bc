import CQueueCore

/// A concurrent queue: starts work items in submission order and runs them in parallel; a
/// ``SQWorkItemFlags/barrier`` item runs alone. SwiftQueues' `DispatchConcurrentQueue`.
///
/// Everything ``SQQueue`` offers, including `TaskExecutor` (tasks may prefer a concurrent
/// queue), but not `SerialExecutor`: an actor cannot run on a concurrent queue, and the type
/// system says so. The global queues (``SQQueue/global(qos:)``) are concurrent queues.
///
/// `SQQueue(label:attributes: .concurrent)` makes one too (typed `SQQueue`).
///
/// Thread-safety: as ``SQQueue``. Dispatch: `DispatchConcurrentQueue`.
public final class SQConcurrentQueue: SQQueue, @unchecked Sendable {
    /// Creates a concurrent queue.
    ///
    /// - Parameters:
    ///   - label: a name for the queue, copied; it appears in the C core's error messages.
    ///   - qos: without a `target`, the queue targets the global queue of this QoS's priority
    ///     (see ``SQQoS``). Ignored when `target` is given.
    ///   - attributes: ``SQQueue/Attributes/initiallyInactive`` or not; the queue is concurrent
    ///     whether or not ``SQQueue/Attributes/concurrent`` is given.
    ///   - autoreleaseFrequency: accepted and ignored.
    ///   - target: the queue this queue's work runs through; `nil` means the global queue of
    ///     `qos`'s priority. (Targeting a serial queue makes the work serial, as in Dispatch.)
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchConcurrentQueue(label:qos:autoreleaseFrequency:target:)`.
    public init(
        label: String,
        qos: SQQoS = .unspecified,
        attributes: Attributes = [],
        autoreleaseFrequency: AutoreleaseFrequency = .inherit,
        target: SQQueue? = nil
    ) {
        let handle = SQQueue.makeHandle(
            label: label, qos: qos, concurrent: true,
            inactive: attributes.contains(.initiallyInactive), target: target)
        super.init(
            handle: handle, label: label, qos: qos, jobTrampoline: sqRunConcurrentQueueJob,
            isImmortal: false)
    }

    /// The wrapper of one of the C core's global queues.
    internal init(global priority: Priority, qos: SQQoS) {
        let handle = cq_get_global_queue(priority.cValue, 0)!
        let trampoline: cq_function_t
        switch priority {
        case .high: trampoline = sqRunGlobalHighJob
        case .default: trampoline = sqRunGlobalDefaultJob
        case .low: trampoline = sqRunGlobalLowJob
        case .background: trampoline = sqRunGlobalBackgroundJob
        }
        super.init(
            handle: handle, label: String(cString: cq_queue_get_label(handle)), qos: qos,
            jobTrampoline: trampoline, isImmortal: true, globalPriority: priority)
    }
}
