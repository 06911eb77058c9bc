import CQueueCore

extension SQQueue {
    /// How a queue created by ``SQQueue/init(label:qos:attributes:autoreleaseFrequency:target:)``
    /// runs its work.
    ///
    /// A value type; thread-safe. Dispatch: `DispatchQueue.Attributes`.
    public struct Attributes: OptionSet, Sendable, Hashable {
        public let rawValue: UInt64

        public init(rawValue: UInt64) {
            self.rawValue = rawValue
        }

        /// Start work items in FIFO order but run them in parallel (without it: serial).
        public static let concurrent = Attributes(rawValue: 1 << 1)

        /// Create the queue inactive (C: `cq_queue_create_inactive`): it accepts work but runs
        /// none, and may be retargeted freely, until ``SQQueue/activate()`` (or a
        /// ``SQQueue/resume()``). Activate it before dropping the last reference: releasing an
        /// inactive queue stops the process, as releasing a suspended one does.
        public static let initiallyInactive = Attributes(rawValue: 1 << 2)
    }
}
