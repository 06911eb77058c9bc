/// The service's CPU work: a deliberately slow 64-bit hash of a request body.
///
/// Definition (load.py has an independent Python version and checks the service against it):
///
///     h = 0x9E3779B97F4A7C15 ^ byteCount
///     words = the body zero-padded to a multiple of 8 bytes, read as little-endian UInt64
///     repeat for r in 0 ..< rounds:
///         for w in words: h = mix(h ^ w)
///         h = mix(h ^ r)
///     digest = h as 16 lower-case hex digits
///
/// where `mix` is the SplitMix64 finaliser (xor-shift 30, multiply, xor-shift 27, multiply,
/// xor-shift 31). Every step depends on the previous one, so the loop is CPU-bound and cannot
/// be vectorised: with the default 128 rounds a 4 KiB body takes a few hundred microseconds.
/// It is a load generator, not a cryptographic hash.
public enum MixHash {
    /// Rounds used when the command line does not say.
    public static let defaultRounds = 128

    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x &>> 30
        x &*= 0xBF58_476D_1CE4_E5B9
        x ^= x &>> 27
        x &*= 0x94D0_49BB_1331_11EB
        x ^= x &>> 31
        return x
    }

    /// The 64-bit hash of `bytes` (see the type's documentation).
    public static func hash(_ bytes: UnsafeRawBufferPointer, rounds: Int = defaultRounds) -> UInt64 {
        let count = bytes.count
        let fullWords = count / 8
        // The trailing partial word, zero-padded.
        var tail: UInt64 = 0
        let tailCount = count - fullWords * 8
        for index in 0..<tailCount {
            tail |= UInt64(bytes[fullWords * 8 + index]) << (8 * UInt64(index))
        }
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(count)
        for round in 0..<max(rounds, 0) {
            var offset = 0
            for _ in 0..<fullWords {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                h = mix(h ^ word)
                offset += 8
            }
            if tailCount > 0 {
                h = mix(h ^ tail)
            }
            h = mix(h ^ UInt64(round))
        }
        return h
    }

    /// The hash of `bytes` as 16 lower-case hex digits.
    public static func hexDigest(_ bytes: UnsafeRawBufferPointer, rounds: Int = defaultRounds) -> String {
        hex(hash(bytes, rounds: rounds))
    }

    /// The hash of `bytes` as 16 lower-case hex digits.
    public static func hexDigest(_ bytes: [UInt8], rounds: Int = defaultRounds) -> String {
        bytes.withUnsafeBytes { hexDigest($0, rounds: rounds) }
    }

    /// `value` as exactly 16 lower-case hex digits.
    public static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
