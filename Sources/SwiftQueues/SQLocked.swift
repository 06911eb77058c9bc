/// A value guarded by a mutex, owned by an object: the Swift layer's own bookkeeping where the
/// value's lifetime is an object's (a semaphore's async waiters, a source sequence's buffer).
/// Not public API.
///
/// Why not `Synchronization.Mutex`: on Linux its contended path (a priority-inheritance futex
/// in libswiftSynchronization, which is not built for ThreadSanitizer) hands the lock over where
/// the sanitizer cannot see it, so `swift test --sanitize=thread` reports races between
/// critical sections of the same mutex. ``SQOperationLock`` is a `pthread_mutex_t`, which the
/// sanitizer intercepts; this class frees it when the last reference goes.
///
/// Thread-safe; `withLock` blocks while another thread holds the lock (hold it only for a few
/// instructions, and never call out to code that could take it again).
internal final class SQLocked<State>: @unchecked Sendable {
    private let lock: SQOperationLock<State>

    private init(_ initial: State) {
        lock = SQOperationLock(initial)
    }

    static func make(_ initial: State) -> SQLocked<State> {
        SQLocked(initial)
    }

    deinit {
        lock.deallocate()
    }

    @inline(__always)
    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try lock.withLock(body)
    }
}
