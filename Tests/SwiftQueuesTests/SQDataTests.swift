#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Foundation
import SwiftQueues
import Testing

/// SQData as a user of DispatchData writes it, each scenario also run on Dispatch's
/// `DispatchData` where Dispatch can, for equal results (C: Tests/c/test_data.c).
@Suite struct SQDataTests {
    /// `count` bytes starting at `seed`, wrapping.
    private func bytes(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) + $0) }
    }

    private func sq(_ b: [UInt8]) -> SQData {
        b.withUnsafeBytes { SQData(bytes: $0) }
    }

    private func dd(_ b: [UInt8]) -> DispatchData {
        b.withUnsafeBytes { DispatchData(bytes: $0) }
    }

    /// The regions as (index of the first byte, size), through enumerateBytes.
    private func regions(_ d: SQData) -> [[Int]] {
        var out: [[Int]] = []
        d.enumerateBytes { buffer, index, _ in out.append([index, buffer.count]) }
        return out
    }

    private func regions(_ d: DispatchData) -> [[Int]] {
        var out: [[Int]] = []
        d.enumerateBytes { buffer, index, _ in out.append([index, buffer.count]) }
        return out
    }

    @Test func testEmpty() {
        let e = SQData.empty
        #expect(e.count == 0)
        #expect(e.isEmpty)
        #expect(Array(e) == [])
        #expect(regions(e) == [])
        #expect(e.startIndex == 0 && e.endIndex == 0)
        #expect(SQData(bytes: UnsafeRawBufferPointer(start: nil, count: 0)).count == 0)
        #expect(e.subdata(in: 0..<0).count == 0)
        let r = e.region(location: 0)
        #expect(r.data.count == 0 && r.offset == 0)
        #expect(DispatchData.empty.count == 0)
        var grown = SQData.empty
        grown.append(SQData.empty)
        #expect(grown.count == 0)
        let sum = e.withUnsafeBytes { (_: UnsafePointer<UInt8>) in 7 }
        #expect(sum == 7)
    }

    @Test func testInitCopiesAndCollection() {
        var source = bytes(300, seed: 5)
        let d = sq(source)
        let r = dd(source)
        source[0] = 0xff // the data has its own copy
        #expect(d.count == 300)
        #expect(Array(d) == Array(r))
        #expect([UInt8](d) == bytes(300, seed: 5))
        #expect(d[0] == 5 && d[299] == r[299])
        #expect(d.first == r.first && d.last == r.last)
        #expect(d.reduce(0) { $0 &+ Int($1) } == r.reduce(0) { $0 &+ Int($1) })
        #expect(Array(d[10..<20]) == Array(r[10..<20]))
        #expect(d.index(after: 3) == 4 && d.index(before: 3) == 2)
        #expect(d.map { $0 } == r.map { $0 })
    }

    @Test func testAppendSharesRegions() {
        var d = SQData.empty
        var r = DispatchData.empty
        for (i, n) in [10, 20, 30, 40].enumerated() {
            let b = bytes(n, seed: UInt8(i * 50))
            d.append(sq(b))
            r.append(dd(b))
        }
        #expect(d.count == 100)
        #expect(Array(d) == Array(r))
        #expect(regions(d) == [[0, 10], [10, 20], [30, 30], [60, 40]])
        #expect(regions(d) == regions(r))
        // a concatenation of concatenations stays flat
        var twice = d
        twice.append(d)
        var rtwice = r
        rtwice.append(r)
        #expect(regions(twice).count == 8)
        #expect(regions(twice) == regions(rtwice))
        #expect(Array(twice) == Array(rtwice))
        // the other overloads copy their bytes
        var a = SQData.empty
        var ra = DispatchData.empty
        let extra = bytes(5, seed: 200)
        extra.withUnsafeBytes { a.append($0); ra.append($0) }
        extra.withUnsafeBufferPointer { a.append($0); ra.append($0) }
        let words: [UInt16] = [0x0102, 0x0304]
        words.withUnsafeBufferPointer { a.append($0); ra.append($0) }
        #expect(a.count == 14)
        #expect(Array(a) == Array(ra))
    }

    /// `regions`: each region in place, as Foundation's `DispatchData.regions` gives them.
    @Test func testRegions() {
        var d = SQData.empty
        var r = DispatchData.empty
        #expect(d.regions.isEmpty)
        for (i, n) in [3, 7, 5].enumerated() {
            let b = bytes(n, seed: UInt8(i * 40))
            d.append(sq(b))
            r.append(dd(b))
        }
        let ours = d.regions.map { region in region.withUnsafeBytes { Array($0) } }
        let theirs = r.regions.map { region in region.withUnsafeBytes { Array($0) } }
        #expect(ours.map(\.count) == [3, 7, 5])
        #expect(ours == theirs)
        #expect(d.regions.map { Array($0) } == ours)
        // Indexed by offset in the whole data, as Foundation's (they were indexed from 0: a
        // search region by region gave offsets local to each region).
        #expect(d.regions.map(\.startIndex) == [0, 3, 10])
        #expect(d.regions.map(\.startIndex) == r.regions.map(\.startIndex))
        #expect(d.regions.map(\.endIndex) == r.regions.map(\.endIndex))
        #expect(d.regions[1][3 + 2] == Array(r)[3 + 2])
        #expect(d.regions[2].firstIndex(of: Array(r)[12]) == r.regions[2].firstIndex(of: Array(r)[12]))
        let middle = d.subdata(in: 2..<12)
        let theirMiddle = r.subdata(in: 2..<12)
        #expect(middle.regions.map(\.startIndex) == theirMiddle.regions.map(\.startIndex))
        #expect(middle.regions.map { Array($0) } == theirMiddle.regions.map { Array($0) })
    }

    /// A region keeps its bytes alive after the data it came from is gone (it holds that data,
    /// and points into it: no object of its own per region).
    @Test func testRegionsOutliveTheirData() {
        func makeRegions() -> [SQData.Region] {
            var d = SQData.empty
            for i in 0..<3 {
                d.append(sq(bytes(16, seed: UInt8(i))))
            }
            return d.regions
        }
        let regions = makeRegions()
        #expect(regions.count == 3)
        for (i, region) in regions.enumerated() {
            #expect(Array(region) == bytes(16, seed: UInt8(i)))
            #expect(region.withUnsafeBytes { Array($0) } == bytes(16, seed: UInt8(i)))
        }
    }

    @Test func testSubdataAndSubscript() {
        var d = SQData.empty
        var r = DispatchData.empty
        for i in 0..<5 {
            let b = bytes(7, seed: UInt8(i * 7))
            d.append(sq(b))
            r.append(dd(b))
        }
        for range in [0..<35, 3..<4, 5..<30, 6..<8, 7..<14, 34..<35, 0..<0, 35..<35] {
            let s = d.subdata(in: range)
            let rs = r.subdata(in: range)
            #expect(Array(s) == Array(rs), "range \(range)")
            #expect(s.count == range.count)
        }
        for i in 0..<35 {
            #expect(d[i] == r[i])
        }
        var it = d.makeIterator()
        var n = 0
        while let byte = it.next() {
            #expect(byte == UInt8(n))
            n += 1
        }
        #expect(n == 35)
    }

    @Test func testRegion() {
        var d = SQData.empty
        var r = DispatchData.empty
        for (i, n) in [10, 20, 30].enumerated() {
            let b = bytes(n, seed: UInt8(i * 10))
            d.append(sq(b))
            r.append(dd(b))
        }
        for location in [0, 9, 10, 29, 30, 59] {
            let (region, offset) = d.region(location: location)
            let (rregion, roffset) = r.region(location: location)
            #expect(offset == roffset, "location \(location)")
            #expect(Array(region) == Array(rregion), "location \(location)")
        }
        let past = d.region(location: 60)
        #expect(past.data.count == 0 && past.offset == 60)
    }

    @Test func testWithUnsafeBytes() {
        let single = sq(bytes(16))
        let first = single.withUnsafeBytes { (p: UnsafePointer<UInt8>) in p }
        let again = single.withUnsafeBytes { (p: UnsafePointer<UInt8>) in p }
        #expect(first == again) // one region: in place, no copy
        var joined = single
        joined.append(sq(bytes(16, seed: 16)))
        let sum = joined.withUnsafeBytes { (p: UnsafePointer<UInt8>) in
            (0..<32).reduce(0) { $0 + Int(p[$1]) }
        }
        #expect(sum == (0..<32).reduce(0, +))
        let words = joined.withUnsafeBytes { (p: UnsafePointer<UInt32>) in p[0] }
        var rjoined = dd(bytes(16))
        rjoined.append(dd(bytes(16, seed: 16)))
        #expect(words == rjoined.withUnsafeBytes { (p: UnsafePointer<UInt32>) in p[0] })
    }

    @Test func testEnumerateBytesStops() {
        var d = SQData.empty
        var r = DispatchData.empty
        for i in 0..<4 {
            d.append(sq(bytes(3, seed: UInt8(i))))
            r.append(dd(bytes(3, seed: UInt8(i))))
        }
        var seen: [Int] = []
        d.enumerateBytes { _, index, stop in
            seen.append(index)
            if seen.count == 2 { stop = true }
        }
        var rseen: [Int] = []
        r.enumerateBytes { _, index, stop in
            rseen.append(index)
            if rseen.count == 2 { stop = true }
        }
        #expect(seen == [0, 3])
        #expect(seen == rseen)
    }

    @Test func testCopyBytes() {
        var d = sq(bytes(10))
        d.append(sq(bytes(10, seed: 10)))
        var r = dd(bytes(10))
        r.append(dd(bytes(10, seed: 10)))
        var out = [UInt8](repeating: 0, count: 20)
        var rout = out
        out.withUnsafeMutableBytes { d.copyBytes(to: $0, count: 15) }
        rout.withUnsafeMutableBytes { r.copyBytes(to: $0, count: 15) }
        #expect(out == rout)
        out.withUnsafeMutableBytes { d.copyBytes(to: $0, from: 5..<18) }
        rout.withUnsafeMutableBytes { r.copyBytes(to: $0, from: 5..<18) }
        #expect(out == rout)
        var small = [UInt8](repeating: 0, count: 4)
        var rsmall = small
        let n = small.withUnsafeMutableBufferPointer { d.copyBytes(to: $0, from: 8..<20) }
        let rn = rsmall.withUnsafeMutableBufferPointer { r.copyBytes(to: $0, from: 8..<20) }
        #expect(n == 4 && n == rn && small == rsmall)
        var wide = [UInt32](repeating: 0, count: 8)
        var rwide = wide
        let w = wide.withUnsafeMutableBufferPointer { d.copyBytes(to: $0) }
        let rw = rwide.withUnsafeMutableBufferPointer { r.copyBytes(to: $0) }
        #expect(w == 20 && w == rw && wide == rwide)
    }

    /// A count or range past the end of the data copies the bytes there are and leaves the
    /// rest of the buffer alone, as DispatchData does: `copyBytes(to: buffer, count:
    /// buffer.count)` with a larger buffer is a common idiom (it stopped the process).
    @Test func testCopyBytesPastTheEnd() {
        let d = sq(bytes(5, seed: 1))
        let r = dd(bytes(5, seed: 1))
        var out = [UInt8](repeating: 0xEE, count: 8)
        var rout = out
        out.withUnsafeMutableBytes { d.copyBytes(to: $0, count: 8) }
        rout.withUnsafeMutableBytes { r.copyBytes(to: $0, count: 8) }
        #expect(out == rout)
        #expect(out == bytes(5, seed: 1) + [0xEE, 0xEE, 0xEE])
        out = [UInt8](repeating: 0xEE, count: 8)
        rout = out
        out.withUnsafeMutableBytes { d.copyBytes(to: $0, from: 2..<8) }
        rout.withUnsafeMutableBytes { r.copyBytes(to: $0, from: 2..<8) }
        #expect(out == rout)
        out.withUnsafeMutableBytes { d.copyBytes(to: $0, from: 6..<8) }  // wholly past the end
        rout.withUnsafeMutableBytes { r.copyBytes(to: $0, from: 6..<8) }
        #expect(out == rout)
    }

    @Test func testSubdataPastTheEndIsCut() {
        // Data cut into 4,096-byte frames, the last one short: DispatchData cuts a range that
        // runs past the end to the bytes that exist (the old SQData stopped the process).
        let source = bytes(10_000, seed: 3)
        let d = sq(source)
        let r = dd(source)
        var frames: [Int] = []
        var offset = 0
        while offset < d.count {
            let frame = d.subdata(in: offset..<(offset + 4_096))
            let reference = r.subdata(in: offset..<(offset + 4_096))
            #expect(Array(frame) == Array(reference), "frame at \(offset)")
            #expect(Array(frame) == Array(source[offset..<min(offset + 4_096, source.count)]))
            frames.append(frame.count)
            offset += 4_096
        }
        #expect(frames == [4_096, 4_096, 1_808])
        for range in [10_000..<10_010, 12_000..<13_000, 9_999..<20_000, 0..<20_000] {
            #expect(Array(d.subdata(in: range)) == Array(r.subdata(in: range)), "range \(range)")
        }
    }

    @Test func testCustomDeallocatorCapturesThePointer() {
        // The shape ported from DispatchData: the closure captures the buffer it frees, a
        // non-Sendable pointer (with a @Sendable closure this did not compile in Swift 6).
        let freed = SQSemaphore(value: 0)
        let p = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
        p.initializeMemory(as: UInt8.self, repeating: 5)
        do {
            let d = SQData(
                bytesNoCopy: UnsafeRawBufferPointer(p),
                deallocator: .custom(nil, {
                    p.deallocate()
                    freed.signal()
                }))
            #expect(Array(d) == [UInt8](repeating: 5, count: 16))
        }
        #expect(freed.wait(timeout: patience()) == .success)
    }

    @Test func testNoCopyDeallocators() {
        // .custom runs once, on its queue, after the last value is gone
        let queue = SQSerialQueue(label: "data.dealloc")
        let key = SQSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let ran = SQSemaphore(value: 0)
        let runs = Counter()
        let onQueue = Counter()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 9)
        let address = Int(bitPattern: buffer.baseAddress)
        do {
            var d = SQData(
                bytesNoCopy: UnsafeRawBufferPointer(buffer),
                deallocator: .custom(queue, {
                    if SQQueue.getSpecific(key: key) == 1 { onQueue.add() }
                    runs.add()
                    UnsafeMutableRawPointer(bitPattern: address)!.deallocate()
                    ran.signal()
                }))
            #expect(d.withUnsafeBytes { (p: UnsafePointer<UInt8>) in Int(bitPattern: p) } == address)
            d.append(sq([1, 2, 3]))
            let part = d.subdata(in: 1..<3)
            #expect(Array(part) == [9, 9])
            #expect(runs.value == 0)
        }
        #expect(ran.wait(timeout: patience()) == .success)
        queue.sync {}
        #expect(runs.value == 1 && onQueue.value == 1)

        // .free takes a malloc'd buffer
        let heap = malloc(32)!
        memset(heap, 4, 32)
        let freed = SQData(bytesNoCopy: UnsafeRawBufferPointer(start: heap, count: 32), deallocator: .free)
        #expect(Array(freed) == [UInt8](repeating: 4, count: 32))

        // .unmap takes an mmap'd buffer
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let map = mmap(nil, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
        #expect(map != MAP_FAILED)
        let mapped = SQData(bytesNoCopy: UnsafeRawBufferPointer(start: map, count: page), deallocator: .unmap)
        #expect(mapped.count == page)
    }

    @Test func testFoundationBridging() {
        let data = Data(bytes(100, seed: 1))
        let d = SQData(data)
        #expect(d.count == 100)
        #expect(Data(d) == data)
        var two = d
        two.append(SQData([1, 2, 3]))
        #expect(Data(two) == data + Data([1, 2, 3]))
        #expect([UInt8](two) == [UInt8](data) + [1, 2, 3])
        #expect(SQData([UInt8]()).count == 0)
        #expect(SQData(bytes(5).lazy.map { $0 }).count == 5) // not contiguous: through an array
        #expect(two.withContiguousStorageIfAvailable { $0.count } == nil)
        #expect(d.withContiguousStorageIfAvailable { Array($0) } == [UInt8](data))
    }

    @Test func testSharedBetweenThreads() {
        var base = sq(bytes(50))
        base.append(sq(bytes(50, seed: 50)))
        let shared = base
        let total = Counter()
        SQQueue.concurrentPerform(iterations: 32) { i in
            var local = shared.subdata(in: (i % 50)..<((i % 50) + 30))
            local.append(shared)
            total.add(local.count)
        }
        #expect(total.value == 32 * 130)
    }
}
