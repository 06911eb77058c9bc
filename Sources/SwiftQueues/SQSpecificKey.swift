import CQueueCore

/// A key for per-queue values of type `T` (``SQQueue/setSpecific(key:value:)``). Keys are
/// compared by identity: create one per purpose, typically as a `static let`.
///
/// A queue that holds a value for a key keeps the key alive, so a key's identity is never
/// reused while a value is stored under it.
///
/// Thread-safe (immutable). Dispatch: `DispatchSpecificKey<T>`.
public final class SQSpecificKey<T>: Sendable {
    /// Creates a new, distinct key.
    public init() {}
}

extension SQSpecificKey where T: Sendable {
    /// The C key: the key object's address.
    internal var cKey: UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    /// The value of a C lookup, or nil.
    internal func value(from pointer: UnsafeMutableRawPointer?) -> T? {
        guard let pointer else { return nil }
        // safety: only setSpecific stores values under this key's address, always an
        // SQSpecificBox<T>, and the box is alive while the queue holds it.
        return Unmanaged<SQSpecificBox<T>>.fromOpaque(pointer).takeUnretainedValue().value
    }
}

/// The value stored in the C core for one key on one queue: the value, and the key it belongs
/// to (keeping the key alive keeps its address, the C key, from being reused for another type).
/// Freed by ``sqReleaseSpecificBox`` when the value is replaced or the queue is freed.
internal final class SQSpecificBox<T: Sendable> {
    internal let key: SQSpecificKey<T>
    internal let value: T

    internal init(key: SQSpecificKey<T>, value: T) {
        self.key = key
        self.value = value
    }
}

/// The C destructor of ``SQSpecificBox`` values: drops the reference the queue held.
internal let sqReleaseSpecificBox: cq_function_t = { context in
    // safety: the context was passRetained once by setSpecific, and the C core runs each
    // value's destructor exactly once.
    Unmanaged<AnyObject>.fromOpaque(context!).release()
}
