import CQueueCore

extension SQData {
    /// One contiguous region of an ``SQData``: a `RandomAccessCollection` of its bytes, indexed
    /// by their offsets in the whole data (as Foundation's: the second of two 6-byte regions
    /// runs from index 6 to 12), whose ``withUnsafeBytes(_:)`` lends them in place. Holds the
    /// region's bytes alive (no copy).
    ///
    /// Foundation on Linux: `DispatchData.Region`, the element of `DispatchData.regions`.
    public struct Region: RandomAccessCollection, @unchecked Sendable {
        public typealias Index = Int
        public typealias Element = UInt8
        public typealias Indices = Range<Int>
        public typealias SubSequence = Slice<Region>

        /// The data the region belongs to, which holds its bytes alive (they never change).
        private let owner: SQData
        /// The region's bytes, `count` of them, inside `owner`'s.
        private let base: UnsafeRawPointer?
        private let size: Int
        /// Where the region starts in `owner`: its first index.
        private let offset: Int

        // safety (@unchecked Sendable): `base` points into `owner`'s bytes, which are immutable
        // and live as long as `owner`, which the region holds.
        fileprivate init(owner: SQData, base: UnsafeRawPointer?, size: Int, offset: Int) {
            self.owner = owner
            self.base = base
            self.size = size
            self.offset = offset
        }

        /// The region's offset in the data it came from.
        public var startIndex: Int { offset }

        /// `startIndex` plus the number of bytes.
        public var endIndex: Int { offset + size }

        public var indices: Range<Int> { offset..<offset + size }

        public func index(before i: Int) -> Int { i - 1 }

        public func index(after i: Int) -> Int { i + 1 }

        /// The byte at `index` (`startIndex..<endIndex`; another index stops the process).
        public subscript(index: Int) -> UInt8 {
            sqRequire(
                index >= offset && index - offset < size,
                "SQData.Region: index \(index) out of range \(offset)..<\(offset + size)")
            return withExtendedLifetime(owner) {
                base.unsafelyUnwrapped.load(fromByteOffset: index - offset, as: UInt8.self)
            }
        }

        public subscript(bounds: Range<Int>) -> Slice<Region> {
            Slice(base: self, bounds: bounds)
        }

        /// Calls `body` with the region's bytes, in place (a region is contiguous).
        /// Foundation: `ContiguousBytes.withUnsafeBytes(_:)`.
        public func withUnsafeBytes<Result>(
            _ body: (UnsafeRawBufferPointer) throws -> Result
        ) rethrows -> Result {
            try withExtendedLifetime(owner) {
                try body(UnsafeRawBufferPointer(start: size == 0 ? nil : base, count: size))
            }
        }
    }

    /// The contiguous regions, in order, each sharing its bytes with this data (no copy, and
    /// nothing allocated per region: each holds this data and a pointer into it). Empty data
    /// has no region.
    ///
    /// Foundation on Linux: `DispatchData.regions` (from its `DataProtocol` conformance).
    public var regions: [Region] {
        let handle = cHandle
        let count = cq_data_get_region_count(handle)
        var regions: [Region] = []
        regions.reserveCapacity(count)
        withExtendedLifetime(self) {
            for i in 0..<count {
                var size = 0
                var start = 0
                let bytes = cq_data_get_region(handle, i, &size, &start)
                regions.append(Region(owner: self, base: bytes, size: size, offset: start))
            }
        }
        return regions
    }
}
