#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock of an ``SQOperationQueue`` and the value it guards: a glibc *adaptive* mutex,
/// which spins briefly before it sleeps. A queue's lock is taken by the thread adding
/// operations and by every pool thread finishing one, for a few dozen nanoseconds each time;
/// spinning through such short waits is several times cheaper than sleeping in the kernel
/// (which the standard library's `Mutex` does on Linux). Not public API.
///
/// The mutex and the value share one allocation, reached through a pointer that never
/// changes: taking the lock reads no cache line that other threads write, except the mutex's
/// own.
///
/// Thread-safety: ``withLock(_:)`` may be called from any thread; it is not reentrant.
internal struct SQOperationLock<Value>: @unchecked Sendable {
    private struct Storage {
        var mutex: pthread_mutex_t
        /// Read and written only between `pthread_mutex_lock` and `pthread_mutex_unlock`,
        /// which order every access (acquire on lock, release on unlock).
        var value: Value
    }

    private let storage: UnsafeMutablePointer<Storage>

    /// Allocates the lock. Release it with ``deallocate()`` exactly once.
    /// `alignment`: of the allocation (a cache line's 64 for a lock whose value is laid out
    /// by cache line; see `SQOperationQueue.LockedState`).
    init(_ value: Value, alignment: Int = MemoryLayout<Storage>.alignment) {
        storage = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<Storage>.stride,
            alignment: Swift.max(alignment, MemoryLayout<Storage>.alignment)
        ).bindMemory(to: Storage.self, capacity: 1)
        storage.initialize(to: Storage(mutex: pthread_mutex_t(), value: value))
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        let status = withUnsafeMutablePointer(to: &storage.pointee.mutex) {
            pthread_mutex_init($0, &attributes)
        }
        pthread_mutexattr_destroy(&attributes)
        sqRequire(status == 0, "SQOperationQueue: pthread_mutex_init failed (\(status))")
    }

    /// Frees the lock and the value. No thread may use the lock any more.
    func deallocate() {
        pthread_mutex_destroy(mutex)
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    private var mutex: UnsafeMutablePointer<pthread_mutex_t> {
        // safety: `mutex` is the first field of a struct of imported C type and a Swift value;
        // its address inside the allocation is stable.
        UnsafeMutableRawPointer(storage).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Runs `body` with the lock held and the value lent to it.
    @inline(__always)
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee.value)
    }
}
