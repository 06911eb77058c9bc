import CQueueCore

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
