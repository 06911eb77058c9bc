import SwiftQueues
import Testing

/// User-data sources: add / or / replace merged from several threads, coalescing while a
/// handler is pending or the source is suspended (C: Tests/c data source tests).
///
/// The handlers hold the source `unowned` (each test keeps it alive until it has cancelled
/// it): a strong capture makes the handler's release, on a pool thread, drop the last reference,
/// and ThreadSanitizer, which does not see Swift's reference counting, then reports the test
/// thread's earlier reads of the source against its disposal there.
@Suite struct SourceUserDataTests {
    @Test func testAddCoalescesToTheSum() {
        let q = SQQueue(label: "data-add")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let sum = Counter()
        let calls = Counter()
        let done = SQSemaphore(value: 0)
        let total = 4 * 10_000
        source.setEventHandler { [unowned source] in
            calls.add()
            let data = Int(source.data)
            if sum.add(data) + data == total { done.signal() }
        }
        source.activate()
        SQQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<10_000 { source.add(data: 1) }
        }
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(sum.value == total)
        #expect(calls.value >= 1 && calls.value <= total)
        #expect(source.handle == 0 && source.mask == 0)
    }

    @Test func testOrCoalescesToTheUnion() {
        let q = SQQueue(label: "data-or")
        let source = SQSource.makeUserDataOrSource(queue: q)
        let seen = Log<UInt>()
        let done = SQSemaphore(value: 0)
        source.setEventHandler { [unowned source] in
            seen.append(source.data)
            if seen.values.reduce(0, |) == UInt.max { done.signal() }
        }
        source.activate()
        SQQueue.concurrentPerform(iterations: UInt.bitWidth) { bit in
            source.or(data: 1 << UInt(bit))
            source.or(data: 0)  // changes nothing, fires nothing
        }
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(seen.values.allSatisfy { $0 != 0 })
        #expect(seen.values.reduce(0, |) == UInt.max)
    }

    @Test func testReplaceKeepsTheLastValue() {
        let q = SQQueue(label: "data-replace")
        let source = SQSource.makeUserDataReplaceSource(queue: q)
        let seen = Log<UInt>()
        let done = SQSemaphore(value: 0)
        source.setEventHandler { [unowned source] in
            seen.append(source.data)
            if source.data == 1000 { done.signal() }
        }
        source.activate()
        for value in UInt(1)...1000 {
            source.replace(data: value)
        }
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        // Each call saw the latest value stored before it ran: strictly increasing, ending at
        // the last one.
        let values = seen.values
        #expect(values.last == 1000)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func testReplaceWithZeroClearsThePendingValue() {
        let q = SQQueue(label: "data-replace-zero")
        let source = SQSource.makeUserDataReplaceSource(queue: q)
        let seen = Log<UInt>()
        let done = SQSemaphore(value: 0)
        source.setEventHandler { [unowned source] in
            seen.append(source.data)
            done.signal()
        }
        source.activate()
        source.suspend()
        source.replace(data: 5)
        source.replace(data: 0)
        source.resume()
        source.replace(data: 42)
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(seen.values.first == 42)
    }

    @Test func testSuspendedSourceCoalescesIntoOneCall() {
        let q = SQQueue(label: "data-suspend")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let calls = Log<UInt>()
        let done = SQSemaphore(value: 0)
        let registered = SQSemaphore(value: 0)
        source.setRegistrationHandler { registered.signal() }
        source.setEventHandler { [unowned source] in
            calls.append(source.data)
            done.signal()
        }
        source.activate()
        #expect(registered.wait(timeout: patience()) == .success)
        source.suspend()
        source.suspend()  // counted
        for _ in 0..<100 { source.add(data: 1) }
        source.resume()
        source.resume()
        #expect(done.wait(timeout: patience()) == .success)
        // Everything was merged before the resume: one call sees all of it.
        #expect(calls.values == [100])
        source.add(data: 3)
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(calls.values == [100, 3])
    }

    @Test func testMergesAfterCancelAreDropped() {
        let q = SQQueue(label: "data-cancelled")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let events = Counter()
        let cancelled = SQSemaphore(value: 0)
        source.setEventHandler { events.add() }
        source.setCancelHandler { cancelled.signal() }
        source.activate()
        source.cancel()
        source.add(data: 1)
        #expect(cancelled.wait(timeout: patience()) == .success)
        q.sync {}
        #expect(events.value == 0)
    }
}
