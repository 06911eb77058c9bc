/// Converts a C queue, group or semaphore handle to the `void *` the generic object calls take.
@inlinable
internal func sqObject(_ handle: OpaquePointer) -> UnsafeMutableRawPointer {
    UnsafeMutableRawPointer(handle)
}
