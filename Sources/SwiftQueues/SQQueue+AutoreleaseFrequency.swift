extension SQQueue {
    /// When a queue drains autorelease pools around its work items. There are no autorelease
    /// pools on Linux: every value is accepted and ignored, so Dispatch code ports unchanged.
    ///
    /// A value type; thread-safe. Dispatch: `DispatchQueue.AutoreleaseFrequency`.
    public enum AutoreleaseFrequency: Sendable, Hashable, CaseIterable {
        /// As the target queue (the default).
        case inherit
        /// A pool around each work item.
        case workItem
        /// No pool.
        case never
    }
}
