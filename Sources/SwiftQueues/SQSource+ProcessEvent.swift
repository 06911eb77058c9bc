extension SQSource {
    /// What a process source watches and reports
    /// (``SQSource/makeProcessSource(identifier:eventMask:queue:)``). The raw values are
    /// Dispatch's (and the C core's `CQ_PROC_*`).
    ///
    /// Dispatch (Darwin): `DispatchSource.ProcessEvent`.
    public struct ProcessEvent: OptionSet, Sendable, Hashable {
        public let rawValue: UInt

        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// The process exited (exact, through a pidfd).
        public static let exit = ProcessEvent(rawValue: 0x8000_0000)
        /// The process forked. Accepted, never reported on Linux.
        public static let fork = ProcessEvent(rawValue: 0x4000_0000)
        /// The process called `exec`. Accepted, never reported on Linux.
        public static let exec = ProcessEvent(rawValue: 0x2000_0000)
        /// The process received a signal. Accepted, never reported on Linux.
        public static let signal = ProcessEvent(rawValue: 0x0800_0000)
        /// All of the above.
        public static let all: ProcessEvent = [.exit, .fork, .exec, .signal]
    }
}
