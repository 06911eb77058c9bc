extension SQSource {
    /// Options for a timer source (``SQSource/makeTimerSource(flags:queue:)``).
    ///
    /// Dispatch: `DispatchSource.TimerFlags`.
    public struct TimerFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt

        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// Keep to the leeway strictly. Accepted and changes nothing: the reactor never fires a
        /// timer later than its deadline plus its leeway anyway, and delays it only to fire it
        /// together with another. Dispatch: `DispatchSource.TimerFlags.strict`.
        public static let strict = TimerFlags(rawValue: 1)
    }
}
