/// The bits of ``SQOperation``'s lock-free state words. Not public API.
internal enum SQOperationFlags {
    // `SQOperation.flags`: written only under the operation lock (plain release stores of
    // the whole word, so writers never race), read lock-free with acquire loads.

    /// ``SQOperation/cancel()`` was called (before the operation finished).
    static let cancelled: UInt8 = 1 << 0
    /// The operation finished (`phase == .finished`).
    static let finished: UInt8 = 1 << 1
    /// The default start path is running it (`phase == .executing`).
    static let executing: UInt8 = 1 << 2
    /// `cancelled || unfinished == 0`: the default ``SQOperation/isReady``.
    static let baseReady: UInt8 = 1 << 3
    /// The default ``SQOperation/start()`` ran it (it ran `main`, or finished it cancelled):
    /// it counts in its queue's ``SQOperationQueue/progress``. An operation whose override of
    /// `start()` never calls `super.start()` does not, as Foundation documents.
    static let defaultStarted: UInt8 = 1 << 4

    // `SQOperation.waitState`: changed only by sequentially consistent read-modify-writes, so
    // a waiter and the finishing thread always see each other's bit in one of the two orders.

    /// A waiter registered (under the operation lock) or is about to.
    static let hasWaiters: UInt8 = 1 << 0
    /// The operation finished completely: waiters return at once.
    static let released: UInt8 = 1 << 1
}
