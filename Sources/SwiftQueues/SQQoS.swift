/// A quality-of-service class and relative priority, in Dispatch's shape: SwiftQueues'
/// `DispatchQoS`.
///
/// The C core schedules by four priorities, not by QoS. A QoS class picks one of them, as
/// libdispatch's own mapping (and the C core's `cq_dispatch.h`) does:
///
/// | QoS class                                   | priority (``SQQueue/Priority``)  |
/// |---------------------------------------------|----------------------------------|
/// | ``QoSClass/userInteractive``, ``QoSClass/userInitiated`` | ``SQQueue/Priority/high`` |
/// | ``QoSClass/default``, ``QoSClass/unspecified``           | ``SQQueue/Priority/default`` |
/// | ``QoSClass/utility``             | ``SQQueue/Priority/low``         |
/// | ``QoSClass/background``          | ``SQQueue/Priority/background`` (threads at nice 19) |
///
/// Where it takes effect: ``SQQueue/global(qos:)`` returns the global queue of the mapped
/// priority, and ``SQQueue/init(label:qos:attributes:autoreleaseFrequency:target:)`` makes the
/// new queue target that global queue. Everywhere else (`async(qos:)`, `asyncAfter(qos:)`,
/// ``SQWorkItem/init(qos:flags:block:)``, `notify(qos:)`) the QoS is accepted and ignored:
/// work runs at the priority of the queue it is submitted to, and there is no QoS propagation
/// or override. ``relativePriority`` is checked and otherwise ignored.
///
/// A value type; thread-safe. Dispatch: `DispatchQoS`.
public struct SQQoS: Sendable, Hashable {
    /// The class. Dispatch: `DispatchQoS.qosClass`.
    public let qosClass: QoSClass

    /// The priority within the class, from -15 (`QOS_MIN_RELATIVE_PRIORITY`) to 0. Checked,
    /// then ignored: the C core has no priorities within a class.
    /// Dispatch: `DispatchQoS.relativePriority`.
    public let relativePriority: Int

    /// A QoS of class `qosClass` with a priority within it of `relativePriority`, which must be
    /// in `-15 ... 0` (the process stops otherwise, with a message).
    ///
    /// Dispatch: `DispatchQoS(qosClass:relativePriority:)`.
    public init(qosClass: QoSClass, relativePriority: Int) {
        sqRequire(
            (-15...0).contains(relativePriority),
            "SQQoS(qosClass: .\(qosClass), relativePriority: \(relativePriority)): "
                + "the relative priority must be in -15 ... 0")
        self.qosClass = qosClass
        self.relativePriority = relativePriority
    }

    /// Work the user does not see (backups, indexing): the background priority, which runs on
    /// nice-19 threads. Dispatch: `DispatchQoS.background`.
    public static let background = SQQoS(qosClass: .background, relativePriority: 0)

    /// Long-running work the user knows about: the low priority.
    /// Dispatch: `DispatchQoS.utility`.
    public static let utility = SQQoS(qosClass: .utility, relativePriority: 0)

    /// The default priority. Dispatch: `DispatchQoS.default`.
    public static let `default` = SQQoS(qosClass: .default, relativePriority: 0)

    /// Work the user waits for: the high priority. Dispatch: `DispatchQoS.userInitiated`.
    public static let userInitiated = SQQoS(qosClass: .userInitiated, relativePriority: 0)

    /// Work that keeps an interface responsive: the high priority (as ``userInitiated``).
    /// Dispatch: `DispatchQoS.userInteractive`.
    public static let userInteractive = SQQoS(qosClass: .userInteractive, relativePriority: 0)

    /// No QoS: the default priority, and the default of every `qos:` parameter.
    /// Dispatch: `DispatchQoS.unspecified`.
    public static let unspecified = SQQoS(qosClass: .unspecified, relativePriority: 0)
}
