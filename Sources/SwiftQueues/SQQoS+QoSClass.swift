extension SQQoS {
    /// A quality-of-service class, mapped onto the C core's priorities as the table at
    /// ``SQQoS`` shows.
    ///
    /// A value type; thread-safe. Dispatch: `DispatchQoS.QoSClass`.
    public enum QoSClass: Sendable, Hashable, CaseIterable {
        /// ``SQQueue/Priority/background``.
        case background
        /// ``SQQueue/Priority/low``.
        case utility
        /// ``SQQueue/Priority/default``.
        case `default`
        /// ``SQQueue/Priority/high``.
        case userInitiated
        /// ``SQQueue/Priority/high``.
        case userInteractive
        /// ``SQQueue/Priority/default``.
        case unspecified

        /// The priority this class runs at (libdispatch's mapping).
        internal var priority: SQQueue.Priority {
            switch self {
            case .userInteractive, .userInitiated: return .high
            case .default, .unspecified: return .default
            case .utility: return .low
            case .background: return .background
            }
        }
    }
}
