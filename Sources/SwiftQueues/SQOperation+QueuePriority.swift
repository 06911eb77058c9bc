extension SQOperation {
    /// The relative order in which a queue starts its *ready* operations when it has no free
    /// slot (``SQOperationQueue/maxConcurrentOperationCount``): higher first, FIFO among
    /// equals. The raw values are Foundation's.
    ///
    /// A value type; thread-safe. Foundation: `Operation.QueuePriority`.
    public enum QueuePriority: Int, Sendable, Hashable, CaseIterable {
        /// Started last (-8).
        case veryLow = -8
        /// -4.
        case low = -4
        /// The default (0).
        case normal = 0
        /// 4.
        case high = 4
        /// Started first (8).
        case veryHigh = 8

        /// The nearest case for any raw value (Foundation rounds other values this way too).
        internal init(normalizing rawValue: Int) {
            switch rawValue {
            case ..<(-6): self = .veryLow
            case ..<(-2): self = .low
            case ...2: self = .normal
            case ...6: self = .high
            default: self = .veryHigh
            }
        }

        /// The index of the queue's ready list for this priority (0 = `veryLow`).
        internal var listIndex: Int {
            switch self {
            case .veryLow: return 0
            case .low: return 1
            case .normal: return 2
            case .high: return 3
            case .veryHigh: return 4
            }
        }
    }

    /// Stores a new priority and, if the operation waits in a ready list, moves it there (to
    /// the back of that list). Setting the priority it has already changes nothing, as in
    /// Foundation: the operation keeps its place.
    internal func setQueuePriority(_ priority: QueuePriority) {
        let new = Int8(priority.rawValue)
        guard priorityStorage.exchange(new, ordering: .relaxed) != new else { return }
        let queue = state.withLock { $0.queueReference() }
        queue?.operationPriorityChanged(self)
    }
}

extension SQOperation {
    /// The ready list of the stored priority (an override of the ``queuePriority`` getter is
    /// not consulted: queues read the stored value, under their lock).
    internal var storedPriorityList: Int {
        QueuePriority(normalizing: Int(priorityStorage.load(ordering: .relaxed))).listIndex
    }
}
