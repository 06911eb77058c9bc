import CQueueCore
import Synchronization

/// The standard library's `Mutex`, with its critical sections made visible to
/// ThreadSanitizer. Not public API.
///
/// `Mutex`'s contended path hands the lock over inside libswiftSynchronization (a futex), which
/// is not built for the sanitizer, so `swift test --sanitize=thread` reported races between
/// critical sections of one mutex whenever two threads contended for it. Each section here
/// acquires on the value's address after taking the lock and releases on it before giving the
/// lock back (`cq_swift_tsan_acquire` / `cq_swift_tsan_release`, no-ops in normal builds: two
/// empty calls).
///
/// Inline storage as `Mutex`'s (no allocation). Thread-safe; `withLock` blocks while another
/// thread holds the lock and is not reentrant.
internal struct SQMutex<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>

    init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    @inline(__always)
    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        // `Mutex` is address-only (raw layout): a borrow of it is its storage, whose address
        // names this mutex. (Not the value's address: taking it inside the section would be an
        // access before the acquire.)
        let tag = withUnsafePointer(to: mutex) { UnsafeRawPointer($0) }
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            cq_swift_tsan_acquire(tag)
            defer { cq_swift_tsan_release(tag) }
            return try body(&value)
        }
    }
}
