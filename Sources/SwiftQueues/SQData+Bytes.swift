import CQueueCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension SQData {
    /// Calls `body` with a pointer to all the bytes, contiguous: in place when the data is one
    /// region, else after copying them once into a buffer that lives until `body` returns (the
    /// copy is one C data object, released then). For empty data the pointer is valid but must
    /// not be read. Dispatch: `DispatchData.withUnsafeBytes(body:)`.
    public func withUnsafeBytes<Result, ContentType>(
        body: (UnsafePointer<ContentType>) throws -> Result
    ) rethrows -> Result {
        var buffer: UnsafeRawPointer? = nil
        var size = 0
        guard let map = cq_data_create_map(storage.handle, &buffer, &size) else {
            fatalError("SQData.withUnsafeBytes: out of memory for a copy of \(count) bytes")
        }
        let mapped = SQData(adopting: map)
        guard let buffer else { // empty data: a valid, aligned address that is never read
            return try withUnsafeTemporaryAllocation(byteCount: 1, alignment: 16) {
                try body(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: ContentType.self))
            }
        }
        return try withExtendedLifetime(mapped) {
            try body(buffer.assumingMemoryBound(to: ContentType.self))
        }
    }

    /// Calls `block` for each contiguous region in order, with its bytes and the index of its
    /// first byte; setting `stop` to true ends the walk. No copy, no allocation.
    /// Dispatch: `DispatchData.enumerateBytes(_:)`.
    public func enumerateBytes(
        _ block: (_ buffer: UnsafeBufferPointer<UInt8>, _ byteIndex: Int, _ stop: inout Bool) -> Void
    ) {
        let handle = storage.handle
        let regions = cq_data_get_region_count(handle)
        var stop = false
        withExtendedLifetime(storage) {
            for i in 0..<regions where !stop {
                var size = 0
                var start = 0
                let bytes = cq_data_get_region(handle, i, &size, &start)!
                block(
                    UnsafeBufferPointer(start: bytes.assumingMemoryBound(to: UInt8.self), count: size),
                    start, &stop)
            }
        }
    }

    /// Copies the first `count` bytes to `pointer`, which must have room for `count` bytes; a
    /// `count` beyond the data's copies the bytes there are, as Dispatch does (the rest of
    /// `pointer` is left as it was). Dispatch: `DispatchData.copyBytes(to:count:)`.
    public func copyBytes(to pointer: UnsafeMutableRawBufferPointer, count: Int) {
        copyBytes(to: pointer, from: 0..<count)
    }

    /// Copies the bytes in `range` to `pointer`, which must have room for `range.count` bytes;
    /// the part of `range` past the end of the data is not copied, as in Dispatch (that part
    /// of `pointer` is left as it was: `copyBytes(to: buffer, count: buffer.count)` with a
    /// larger buffer is a common idiom). A range starting below 0 stops the process.
    /// Dispatch: `DispatchData.copyBytes(to:from:)`.
    public func copyBytes(to pointer: UnsafeMutableRawBufferPointer, from range: Range<Int>) {
        sqRequire(
            range.lowerBound >= 0,
            "SQData.copyBytes: the range \(range) starts before the data's 0..<\(count)")
        sqRequire(
            range.count <= pointer.count,
            "SQData.copyBytes: \(range.count) bytes do not fit in \(pointer.count)")
        let end = Swift.min(range.upperBound, count)
        guard range.lowerBound < end, let base = pointer.baseAddress else {
            return
        }
        _ = cq_data_copy_bytes(storage.handle, range.lowerBound, base, end - range.lowerBound)
    }

    /// Copies the first `count` bytes. Dispatch: `DispatchData.copyBytes(to:count:)` (deprecated
    /// there too).
    @available(swift, deprecated: 4, message: "Use copyBytes(to: UnsafeMutableRawBufferPointer, count: Int) instead")
    public func copyBytes(to pointer: UnsafeMutablePointer<UInt8>, count: Int) {
        copyBytes(to: UnsafeMutableRawBufferPointer(start: pointer, count: count), count: count)
    }

    /// Copies the bytes in `range`. Dispatch: `DispatchData.copyBytes(to:from:)` (deprecated
    /// there too).
    @available(swift, deprecated: 4, message: "Use copyBytes(to: UnsafeMutableRawBufferPointer, from: Range<Index>) instead")
    public func copyBytes(to pointer: UnsafeMutablePointer<UInt8>, from range: Range<Int>) {
        copyBytes(to: UnsafeMutableRawBufferPointer(start: pointer, count: range.count), from: range)
    }

    /// Copies as many bytes of `range` (default: all) as fit in `buffer`; returns how many were
    /// copied. Dispatch: `DispatchData.copyBytes(to:from:)`.
    public func copyBytes<DestinationType>(
        to buffer: UnsafeMutableBufferPointer<DestinationType>, from range: Range<Int>? = nil
    ) -> Int {
        let total = count
        guard total > 0 else {
            return 0
        }
        let room = buffer.count * MemoryLayout<DestinationType>.stride
        let copyRange: Range<Int>
        if let range {
            guard !range.isEmpty else {
                return 0
            }
            sqRequire(
                range.lowerBound >= 0 && range.lowerBound < total && range.upperBound <= total,
                "SQData.copyBytes: the range \(range) is outside 0..<\(total)")
            copyRange = range.lowerBound..<(range.lowerBound + Swift.min(room, range.count))
        } else {
            copyRange = 0..<Swift.min(room, total)
        }
        guard !copyRange.isEmpty, let base = buffer.baseAddress else {
            return 0
        }
        return cq_data_copy_bytes(
            storage.handle, copyRange.lowerBound, UnsafeMutableRawPointer(base), copyRange.count)
    }
}
