import HTTPServiceKit
import Testing

@Suite struct MixHashTests {
    @Test func hexIsSixteenDigits() {
        #expect(MixHash.hex(0) == "0000000000000000")
        #expect(MixHash.hex(0xABC) == "0000000000000abc")
        #expect(MixHash.hex(.max) == "ffffffffffffffff")
    }

    @Test func digestDependsOnEveryByteAndOnTheLength() {
        let body = [UInt8](repeating: 7, count: 13)
        var changed = body
        changed[12] = 8
        #expect(MixHash.hexDigest(body, rounds: 2) != MixHash.hexDigest(changed, rounds: 2))
        #expect(MixHash.hexDigest(body, rounds: 2) != MixHash.hexDigest(body + [0], rounds: 2))
    }

    // Values from load.py's independent Python implementation (`python3 load.py --print-vectors`).
    @Test func knownVectors() {
        #expect(MixHash.hexDigest([], rounds: 1) == "e220a8397b1dcdaf")
        #expect(MixHash.hexDigest(Array("hello, world".utf8), rounds: 3) == "b08478e11acaef69")
        let body = (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        #expect(MixHash.hexDigest(body) == "5d156582520ba036")
    }
}

@Suite struct PlacementTests {
    @Test(arguments: Placement.allCases)
    func everyPlacementReturnsTheWorksValue(placement: Placement) async {
        let body = Array("placement".utf8)
        let expected = MixHash.hexDigest(body, rounds: 4)
        let got = await placement.run { MixHash.hexDigest(body, rounds: 4) }
        #expect(got == expected)
    }
}
