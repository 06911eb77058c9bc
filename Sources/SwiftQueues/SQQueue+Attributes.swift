import CQueueCore

extension SQQueue {
    /// How a queue created by ``SQQueue/init(label:attributes:target:)`` runs its work.
    ///
    /// Dispatch: `DispatchQueue.Attributes` (only `.concurrent`; there is no
    /// `.initiallyInactive`).
    public struct Attributes: OptionSet, Sendable, Hashable {
        public let rawValue: UInt64

        public init(rawValue: UInt64) {
            self.rawValue = rawValue
        }

        /// Start work items in FIFO order but run them in parallel (without it: serial).
        public static let concurrent = Attributes(rawValue: 1 << 1)
    }
}
