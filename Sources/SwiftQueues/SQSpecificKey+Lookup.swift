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
