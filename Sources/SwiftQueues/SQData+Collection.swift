import CQueueCore

extension SQData: RandomAccessCollection {
    public typealias Index = Int
    public typealias Element = UInt8
    public typealias Indices = Range<Int>
    public typealias SubSequence = Slice<SQData>
    public typealias Iterator = SQDataIterator

    /// 0. Dispatch: `DispatchData.startIndex`.
    @inlinable
    public var startIndex: Int { 0 }

    /// ``count``. Dispatch: `DispatchData.endIndex`.
    @inlinable
    public var endIndex: Int { count }

    @inlinable
    public var indices: Range<Int> { 0..<count }

    @inlinable
    public func index(before i: Int) -> Int { i - 1 }

    @inlinable
    public func index(after i: Int) -> Int { i + 1 }

    /// The byte at `index` (0 ≤ index < count): the region holding it is found by binary search
    /// over the regions, O(log regions). To visit every byte, iterate (region by region) or use
    /// ``enumerateBytes(_:)``. Dispatch: `DispatchData.subscript(_:)`.
    public subscript(index: Int) -> UInt8 {
        sqRequire(index >= 0 && index < count, "SQData: index \(index) out of range 0..<\(count)")
        let handle = storage.handle
        let region = cq_data_region_index(handle, index)
        var start = 0
        let bytes = cq_data_get_region(handle, region, nil, &start)!
        return bytes.load(fromByteOffset: index - start, as: UInt8.self)
    }

    /// The bytes in `bounds`, as a slice of this data (no copy). Dispatch:
    /// `DispatchData.subscript(_: Range<Int>)`.
    @inlinable
    public subscript(bounds: Range<Int>) -> Slice<SQData> {
        Slice(base: self, bounds: bounds)
    }

    /// An iterator that walks the bytes region by region. Dispatch: `DispatchData.makeIterator()`.
    public func makeIterator() -> SQDataIterator {
        SQDataIterator(self)
    }

    /// The bytes when the data is one contiguous region (no copy); `nil` for several regions.
    public func withContiguousStorageIfAvailable<R>(
        _ body: (UnsafeBufferPointer<UInt8>) throws -> R
    ) rethrows -> R? {
        let handle = storage.handle
        switch cq_data_get_region_count(handle) {
        case 0:
            return try body(UnsafeBufferPointer(start: nil, count: 0))
        case 1:
            var size = 0
            let bytes = cq_data_get_region(handle, 0, &size, nil)!
            return try withExtendedLifetime(storage) {
                try body(UnsafeBufferPointer(start: bytes.assumingMemoryBound(to: UInt8.self), count: size))
            }
        default:
            return nil
        }
    }

    /// Copies the bytes into `buffer` region by region (`Array(data)`, `[UInt8](data)` and other
    /// collection initializers use it).
    public func _copyContents(
        initializing buffer: UnsafeMutableBufferPointer<UInt8>
    ) -> (SQDataIterator, UnsafeMutableBufferPointer<UInt8>.Index) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else {
            return (makeIterator(), 0)
        }
        let copied = cq_data_copy_bytes(storage.handle, 0, base, buffer.count)
        var rest = makeIterator()
        rest.skip(copied)
        return (rest, copied)
    }
}

/// The iterator of ``SQData``: keeps the current region's bytes, so each step is a load and a
/// compare. Dispatch: `DispatchDataIterator`.
public struct SQDataIterator: IteratorProtocol, Sequence {
    public typealias Element = UInt8

    @usableFromInline
    internal let data: SQData
    @usableFromInline
    internal var bytes: UnsafePointer<UInt8>?
    /// The position (in the data) of the next byte, and the end of the current region.
    @usableFromInline
    internal var position = 0
    @usableFromInline
    internal var regionEnd = 0
    /// The current region's index, and where it starts in the data.
    @usableFromInline
    internal var region = -1
    @usableFromInline
    internal var regionStart = 0

    internal init(_ data: SQData) {
        self.data = data
    }

    /// The next byte, or `nil` at the end. Dispatch: `DispatchDataIterator.next()`.
    @inlinable
    public mutating func next() -> UInt8? {
        if position < regionEnd, let bytes {
            let byte = bytes[position - regionStart]
            position += 1
            return byte
        }
        return nextRegion()
    }

    @usableFromInline
    internal mutating func nextRegion() -> UInt8? {
        let handle = data.storage.handle
        guard position < cq_data_get_size(handle) else {
            return nil
        }
        region = region < 0 ? cq_data_region_index(handle, position) : region + 1
        var size = 0
        var start = 0
        let raw = cq_data_get_region(handle, region, &size, &start)!
        bytes = UnsafePointer(raw.assumingMemoryBound(to: UInt8.self))
        regionStart = start
        regionEnd = start + size
        return next()
    }

    /// Moves past `n` bytes (used after a bulk copy).
    internal mutating func skip(_ n: Int) {
        position += n
        region = -1
        regionEnd = 0
        bytes = nil
    }
}
