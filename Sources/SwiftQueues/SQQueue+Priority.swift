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

        /// The band of a Swift job's priority (`TaskPriority`'s raw values); nil if it has
        /// none (`0`).
        internal init?(jobPriority: JobPriority) {
            let raw = jobPriority.rawValue
            if raw == 0 {
                return nil
            } else if raw >= TaskPriority.high.rawValue {
                self = .high
            } else if raw >= TaskPriority.medium.rawValue {
                self = .default
            } else if raw >= TaskPriority.low.rawValue {
                self = .low
            } else {
                self = .background
            }
        }

        /// Whether this band's work runs before `other`'s.
        internal func isHigher(than other: Priority) -> Bool {
            cValue > other.cValue
        }
    }
}

extension SQQueue {
    /// Dispatch's name for ``Priority``, so that code naming the type ports by a rename.
    ///
    /// Dispatch: `DispatchQueue.GlobalQueuePriority`.
    public typealias GlobalQueuePriority = Priority
}
