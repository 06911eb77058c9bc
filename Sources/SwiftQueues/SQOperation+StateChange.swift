extension SQOperation {
    /// A transition of an operation's state, as reported by
    /// ``SQOperation/observeStateChanges(_:)`` and ``SQOperation/stateChanges``: what KVO
    /// notifications of `isReady`, `isCancelled`, `isExecuting` and `isFinished` tell on
    /// Darwin.
    ///
    /// Each operation reports its transitions in the order they happened: `ready` and
    /// `notReady` alternate (an operation starts ready; adding a dependency makes it
    /// `notReady`; its last dependency finishing, its removal or a cancellation makes it
    /// `ready`), `cancelled` and `executing` come at most once, and `finished` comes once and
    /// last.
    ///
    /// A value type; thread-safe. Not in Foundation (which reports these through KVO).
    public enum StateChange: Sendable, Hashable {
        /// ``SQOperation/isReady`` became `true`.
        case ready
        /// ``SQOperation/isReady`` became `false` (a dependency was added).
        case notReady
        /// ``SQOperation/cancel()`` was called before the operation finished.
        case cancelled
        /// The operation started executing.
        case executing
        /// The operation finished. The last change.
        case finished
    }
}
