import CQueueCore

extension SQQueue {
    /// The priority of a global queue (``SQQueue/global(priority:)``). Workers prefer
    /// higher-priority work when they look for new work; background work runs on nice-19
    /// threads. QoS classes map onto these four (see ``SQQoS``).
    ///
    /// Dispatch: `DispatchQueue.GlobalQueuePriority` (the libdispatch priority values).
    public enum Priority: Sendable, Hashable, CaseIterable {
        case high
        case `default`
        case low
        case background

        /// The C core's value (`CQ_QUEUE_PRIORITY_*`).
        internal var cValue: Int {
            switch self {
            case .high: return Int(CQ_QUEUE_PRIORITY_HIGH)
            case .default: return Int(CQ_QUEUE_PRIORITY_DEFAULT)
            case .low: return Int(CQ_QUEUE_PRIORITY_LOW)
            case .background: return Int(CQ_QUEUE_PRIORITY_BACKGROUND)
            }
        }
    }
}
