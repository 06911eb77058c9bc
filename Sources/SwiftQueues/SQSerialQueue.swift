import CQueueCore

/// A serial queue: runs one work item at a time, in submission order, and can run an actor.
/// SwiftQueues' `DispatchSerialQueue`.
///
/// Everything ``SQQueue`` offers, plus `SerialExecutor`: an actor whose `unownedExecutor` is the
/// queue's runs every method on the queue, one at a time, in order with the queue's other work:
///
/// ```swift
/// actor Cache {
///     let queue = SQSerialQueue(label: "cache")
///     nonisolated var unownedExecutor: UnownedSerialExecutor {
///         queue.asUnownedSerialExecutor()
///     }
///     var entries: [String: Int] = [:]
/// }
/// ```
///
/// Code already running on the queue (a plain `queue.async` closure, or work of a queue that
/// targets it) is isolated to such an actor and may say so with `assumeIsolated`; see
/// <doc:SwiftConcurrency>. ``SQConcurrentQueue`` is not a `SerialExecutor`, so a concurrent queue
/// cannot be given to an actor.
///
/// `SQQueue(label:)` without ``SQQueue/Attributes/concurrent`` makes one too (typed `SQQueue`);
/// ``SQQueue/main`` is one (an ``SQMainQueue``).
///
/// Thread-safety: as ``SQQueue``. Dispatch: `DispatchSerialQueue`.
public class SQSerialQueue: SQQueue, @unchecked Sendable {
    /// Creates a serial queue.
    ///
    /// - Parameters:
    ///   - label: a name for the queue, copied; it appears in the C core's error messages.
    ///   - qos: without a `target`, the queue targets the global queue of this QoS's priority
    ///     (see ``SQQoS``). Ignored when `target` is given.
    ///   - attributes: `[]`, or ``SQQueue/Attributes/initiallyInactive`` (the queue runs nothing
    ///     until ``SQQueue/activate()``). ``SQQueue/Attributes/concurrent`` stops the process
    ///     with a message: make an ``SQConcurrentQueue``.
    ///   - autoreleaseFrequency: accepted and ignored.
    ///   - target: the queue this queue's work runs through; `nil` means the global queue of
    ///     `qos`'s priority.
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchSerialQueue(label:qos:autoreleaseFrequency:target:)`.
    public init(
        label: String,
        qos: SQQoS = .unspecified,
        attributes: Attributes = [],
        autoreleaseFrequency: AutoreleaseFrequency = .inherit,
        target: SQQueue? = nil
    ) {
        sqRequire(
            !attributes.contains(.concurrent),
            "SQSerialQueue(label: \"\(label)\"): a serial queue cannot be .concurrent; "
                + "make an SQConcurrentQueue")
        let handle = SQQueue.makeHandle(
            label: label, qos: qos, concurrent: false,
            inactive: attributes.contains(.initiallyInactive), target: target)
        super.init(
            handle: handle, label: label, qos: qos, jobTrampoline: sqRunSerialQueueJob,
            isImmortal: false)
    }

    /// The wrapper of the C core's main queue (``SQQueue/main``).
    internal init(mainQueue: Void) {
        let handle = cq_get_main_queue()!
        super.init(
            handle: handle, label: String(cString: cq_queue_get_label(handle)),
            qos: .unspecified, jobTrampoline: sqRunMainQueueJob, isImmortal: true)
    }
}
