import CQueueCore

extension SQData {
    /// One contiguous region of an ``SQData``: a `RandomAccessCollection` of its bytes (indexed
    /// from 0) whose ``withUnsafeBytes(_:)`` lends them in place. Holds the region's bytes alive
    /// (no copy).
    ///
    /// Foundation on Linux: `DispatchData.Region`, the element of `DispatchData.regions`.
    public struct Region: RandomAccessCollection, Sendable {
        public typealias Index = Int
        public typealias Element = UInt8
        public typealias Indices = Range<Int>
        public typealias SubSequence = Slice<Region>

        /// The region's bytes: data of exactly one region.
        private let data: SQData

        fileprivate init(_ data: SQData) {
            self.data = data
        }

        /// 0.
        public var startIndex: Int { 0 }

        /// The number of bytes.
        public var endIndex: Int { data.count }

        public var indices: Range<Int> { 0..<data.count }

        public func index(before i: Int) -> Int { i - 1 }

        public func index(after i: Int) -> Int { i + 1 }

        /// The byte at `index` (`0..<count`; another index stops the process).
        public subscript(index: Int) -> UInt8 {
            data[index]
        }

        public subscript(bounds: Range<Int>) -> Slice<Region> {
            Slice(base: self, bounds: bounds)
        }

        /// Calls `body` with the region's bytes, in place (a region is contiguous).
        /// Foundation: `ContiguousBytes.withUnsafeBytes(_:)`.
        public func withUnsafeBytes<Result>(
            _ body: (UnsafeRawBufferPointer) throws -> Result
        ) rethrows -> Result {
            let handle = data.cHandle
            if cq_data_get_region_count(handle) == 0 {
                return try body(UnsafeRawBufferPointer(start: nil, count: 0))
            }
            var size = 0
            var start = 0
            let bytes = cq_data_get_region(handle, 0, &size, &start)
            return try withExtendedLifetime(data) {
                try body(UnsafeRawBufferPointer(start: bytes, count: size))
            }
        }
    }

    /// The contiguous regions, in order, each sharing its bytes with this data (no copy; one
    /// small C object per region). Empty data has no region.
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
                _ = cq_data_get_region(handle, i, &size, &start)
                regions.append(Region(subdata(in: start..<(start + size))))
            }
        }
        return regions
    }
}
