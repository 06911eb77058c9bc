import CQueueCore

/// Carries ``SQQueue/init(label:qos:attributes:autoreleaseFrequency:target:)``: an initializer in
/// a protocol extension may assign `self`, which lets `SQQueue(label:...)` return an
/// ``SQSerialQueue`` or an ``SQConcurrentQueue`` (as `DispatchQueue(label:)` returns a serial or
/// a concurrent queue object on Apple platforms). Only ``SQQueue`` conforms. Not API of its own.
public protocol _SQQueueMaking {}

extension _SQQueueMaking where Self == SQQueue {
    /// Creates a queue: an ``SQSerialQueue`` (the default), or an ``SQConcurrentQueue`` with
    /// ``SQQueue/Attributes/concurrent``.
    ///
    /// - Parameters:
    ///   - label: a name for the queue, copied; it appears in the C core's error messages.
    ///   - qos: without a `target`, the queue targets the global queue of this QoS's priority
    ///     (see ``SQQoS``); ``SQQoS/unspecified`` (the default) and ``SQQoS/default`` mean the
    ///     default-priority global queue. Ignored when `target` is given: the target decides.
    ///   - attributes: `[]` for a serial queue, ``SQQueue/Attributes/concurrent`` for a
    ///     concurrent one; with ``SQQueue/Attributes/initiallyInactive`` the queue accepts work
    ///     but runs none until ``SQQueue/activate()``.
    ///   - autoreleaseFrequency: accepted and ignored (there are no autorelease pools on Linux).
    ///   - target: the queue this queue's work runs through; `nil` means the global queue of
    ///     `qos`'s priority.
    ///
    /// The static type is `SQQueue`; the object is an ``SQSerialQueue`` or an
    /// ``SQConcurrentQueue`` (`as?` tells which). To give a queue to an actor, make an
    /// ``SQSerialQueue`` directly.
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchQueue(label:qos:attributes:autoreleaseFrequency:target:)`.
    public init(
        label: String,
        qos: SQQoS = .unspecified,
        attributes: SQQueue.Attributes = [],
        autoreleaseFrequency: SQQueue.AutoreleaseFrequency = .inherit,
        target: SQQueue? = nil
    ) {
        let inactive = attributes.intersection(.initiallyInactive)
        if attributes.contains(.concurrent) {
            self = SQConcurrentQueue(
                label: label, qos: qos, attributes: inactive, target: target)
        } else {
            self = SQSerialQueue(label: label, qos: qos, attributes: inactive, target: target)
        }
    }
}
