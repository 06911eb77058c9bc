import HashTreeKit
import Testing

/// Reference values from the xxhash Python package (the reference C implementation), for
/// the bytes (i * 7 + 3) mod 256, i = 0..<n.
private func sample(_ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) } }

private let prime1: UInt64 = 0x9E37_79B1_85EB_CA87

private let vectors: [(length: Int, seed0: UInt64, seedPrime1: UInt64)] = [
    (0, 0xEF46_DB37_51D8_E999, 0x6EC6_D05F_61C7_E7A7),
    (1, 0x1F25_C8D0_BC1F_4BB6, 0xC960_5B95_DF42_DC9B),
    (4, 0x9BB6_4B7D_66EE_9FDA, 0x37DA_6D96_4719_CAE7),
    (31, 0xA2AA_5F33_CC4A_6119, 0xE8CB_F0E0_0F19_0C6E),
    (32, 0x23C3_C17E_F790_FD97, 0x7CE1_C68E_13AA_E778),
    (33, 0x50A7_CFC7_BA58_8784, 0x89D5_7D87_D9F5_0A9D),
    (100, 0xA61F_8D4C_170F_E531, 0x9869_D9EF_8505_1BE9),
    (200_000, 0x3DC5_47AE_4C06_F1A3, 0x4EF4_712B_531A_30ED),
]

@Suite struct XXH64Tests {
    @Test func emptyInputSeedZero() {
        #expect(XXH64.hash([UInt8](), seed: 0) == 0xEF46_DB37_51D8_E999)
        #expect(XXH64(seed: 0).digest() == 0xEF46_DB37_51D8_E999)
    }

    @Test func abc() {
        #expect(XXH64.hash(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
    }

    @Test(arguments: vectors.indices)
    func oneShot(_ index: Int) {
        let v = vectors[index]
        #expect(XXH64.hash(sample(v.length), seed: 0) == v.seed0, "length \(v.length)")
        #expect(XXH64.hash(sample(v.length), seed: prime1) == v.seedPrime1, "length \(v.length)")
    }

    /// Fed in uneven pieces (carried partial stripes across updates), the hash is the same.
    @Test(arguments: [1, 3, 7, 31, 32, 33, 65_536])
    func streamed(_ piece: Int) {
        for v in vectors {
            let bytes = sample(v.length)
            var hasher = XXH64(seed: prime1)
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + piece, bytes.count)
                hasher.update(Array(bytes[offset..<end]))
                offset = end
            }
            #expect(hasher.digest() == v.seedPrime1, "length \(v.length), pieces of \(piece)")
        }
    }
}

@Suite struct FormatTests {
    @Test func fixed() {
        #expect(HashTreeFormat.fixed(0.0123, 3) == "0.012")
        #expect(HashTreeFormat.fixed(109.52, 1) == "109.5")
        #expect(HashTreeFormat.fixed(2.0, 0) == "2")
        #expect(HashTreeFormat.fixed(0.96, 1) == "1.0")
    }

    @Test func bytes() {
        #expect(HashTreeFormat.bytes(1023) == "1023")
        #expect(HashTreeFormat.bytes(114_847_736) == "114847736 (109.5 MiB)")
        #expect(HashTreeFormat.bytes(2_546_580, suffix: " bytes") == "2546580 bytes (2.4 MiB)")
    }

    @Test func paths() {
        #expect(HashTreeFormat.path(root: "/usr/include/", relative: Array("a.h".utf8)) == "/usr/include/a.h")
        #expect(HashTreeFormat.path(root: "docs", relative: Array("x/y".utf8)) == "docs/x/y")
        #expect(HashTreeFormat.path(root: "docs", relative: []) == "docs")
        #expect(HashTreeFormat.hex(0xABC) == "0000000000000abc")
    }
}
