// XXH64 (xxHash, 64-bit variant), written from the algorithm's specification: four 64-bit
// accumulators each take one 8-byte lane of every 32-byte stripe; the total length and the tail
// (8-, 4- and 1-byte steps) are folded in at the end, then a final avalanche. Lanes are read
// little-endian whatever the host, so digests are the same everywhere (and equal to the C
// example's).

/// A streaming XXH64 hasher: `update` with the bytes in any number of pieces, then `digest()`.
public struct XXH64: Sendable {
    @usableFromInline static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    @usableFromInline static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    @usableFromInline static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    @usableFromInline static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    @usableFromInline static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    private var acc1: UInt64
    private var acc2: UInt64
    private var acc3: UInt64
    private var acc4: UInt64
    private let seed: UInt64
    /// Bytes fed so far.
    private var total: UInt64 = 0
    /// A partial stripe carried between updates (32 bytes as four lanes' worth of storage).
    private var pending: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var pendingCount = 0

    /// A hasher with `seed` (0 for plain XXH64).
    public init(seed: UInt64 = 0) {
        self.seed = seed
        acc1 = seed &+ Self.prime1 &+ Self.prime2
        acc2 = seed &+ Self.prime2
        acc3 = seed
        acc4 = seed &- Self.prime1
    }

    /// The hash of `bytes` in one call.
    public static func hash(_ bytes: some Sequence<UInt8>, seed: UInt64 = 0) -> UInt64 {
        var hasher = XXH64(seed: seed)
        let array = Array(bytes)
        array.withUnsafeBytes { hasher.update($0) }
        return hasher.digest()
    }

    @inline(__always)
    private static func round(_ acc: UInt64, _ lane: UInt64) -> UInt64 {
        (acc &+ lane &* prime2).rotatedLeft(31) &* prime1
    }

    @inline(__always)
    private static func merge(_ hash: UInt64, _ acc: UInt64) -> UInt64 {
        (hash ^ round(0, acc)) &* prime1 &+ prime4
    }

    @inline(__always)
    private static func lane64(_ p: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    private mutating func stripe(_ p: UnsafeRawBufferPointer, _ offset: Int) {
        acc1 = Self.round(acc1, Self.lane64(p, offset))
        acc2 = Self.round(acc2, Self.lane64(p, offset + 8))
        acc3 = Self.round(acc3, Self.lane64(p, offset + 16))
        acc4 = Self.round(acc4, Self.lane64(p, offset + 24))
    }

    /// Feeds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        var length = bytes.count
        total &+= UInt64(length)
        if pendingCount > 0 {  // complete the carried stripe first
            let take = min(32 - pendingCount, length)
            let start = pendingCount
            withUnsafeMutableBytes(of: &pending) { buffer in
                for i in 0..<take { buffer[start + i] = bytes[i] }
            }
            pendingCount += take
            offset += take
            length -= take
            if pendingCount < 32 { return }
            let carried = pending
            withUnsafeBytes(of: carried) { stripe($0, 0) }
            pendingCount = 0
        }
        while length >= 32 {
            stripe(bytes, offset)
            offset += 32
            length -= 32
        }
        if length > 0 {
            withUnsafeMutableBytes(of: &pending) { buffer in
                for i in 0..<length { buffer[i] = bytes[offset + i] }
            }
            pendingCount = length
        }
    }

    /// Feeds the bytes of `array`.
    public mutating func update(_ array: [UInt8]) {
        array.withUnsafeBytes { update($0) }
    }

    /// The hash of everything fed so far (the hasher can go on being fed).
    public func digest() -> UInt64 {
        var h: UInt64
        if total >= 32 {
            h = acc1.rotatedLeft(1) &+ acc2.rotatedLeft(7) &+ acc3.rotatedLeft(12)
                &+ acc4.rotatedLeft(18)
            h = Self.merge(h, acc1)
            h = Self.merge(h, acc2)
            h = Self.merge(h, acc3)
            h = Self.merge(h, acc4)
        } else {
            h = seed &+ Self.prime5
        }
        h &+= total

        let count = pendingCount
        withUnsafeBytes(of: pending) { tail in
            var offset = 0
            while count - offset >= 8 {
                h ^= Self.round(0, Self.lane64(tail, offset))
                h = h.rotatedLeft(27) &* Self.prime1 &+ Self.prime4
                offset += 8
            }
            if count - offset >= 4 {
                let word = UInt32(littleEndian: tail.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                h ^= UInt64(word) &* Self.prime1
                h = h.rotatedLeft(23) &* Self.prime2 &+ Self.prime3
                offset += 4
            }
            while offset < count {
                h ^= UInt64(tail[offset]) &* Self.prime5
                h = h.rotatedLeft(11) &* Self.prime1
                offset += 1
            }
        }

        h ^= h >> 33
        h &*= Self.prime2
        h ^= h >> 29
        h &*= Self.prime3
        h ^= h >> 32
        return h
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
