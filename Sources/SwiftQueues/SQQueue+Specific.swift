import CQueueCore

extension SQQueue {
    /// Stores `value` under `key` on this queue, replacing (and releasing) any previous value;
    /// `nil` removes the key. Work running on this queue, or on a queue that targets it, finds
    /// the value with ``SQQueue/getSpecific(key:)-swift.type.method``.
    ///
    /// Thread-safe; never blocks (may allocate). Replacing or removing a value while another
    /// thread may still be reading that key on this queue is not supported (the old value is
    /// released asynchronously; as with Dispatch, set values before sharing the queue).
    /// Dispatch: `DispatchQueue.setSpecific(key:value:)`.
    public func setSpecific<T: Sendable>(key: SQSpecificKey<T>, value: T?) {
        guard let value else {
            cq_queue_set_specific(handle, key.cKey, nil, nil)
            return
        }
        let box = Unmanaged.passRetained(SQSpecificBox(key: key, value: value)).toOpaque()
        cq_queue_set_specific(handle, key.cKey, box, sqReleaseSpecificBox)
    }

    /// The value stored under `key` on this queue itself (its target queues are not searched),
    /// or `nil`.
    ///
    /// Thread-safe; takes no lock and never blocks.
    /// Dispatch: `DispatchQueue.getSpecific(key:)` (the instance method).
    public func getSpecific<T: Sendable>(key: SQSpecificKey<T>) -> T? {
        key.value(from: cq_queue_get_specific(handle, key.cKey))
    }

    /// The value stored under `key` on the queue the caller is running on, or else on the first
    /// queue along its target chain that has one; `nil` if there is none or the caller is not
    /// running on a queue.
    ///
    /// Thread-safe; takes no lock and never blocks.
    /// Dispatch: `DispatchQueue.getSpecific(key:)` (the static method).
    public static func getSpecific<T: Sendable>(key: SQSpecificKey<T>) -> T? {
        key.value(from: cq_get_specific(key.cKey))
    }
}
