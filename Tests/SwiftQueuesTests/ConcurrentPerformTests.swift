import Testing
import SwiftQueues

/// concurrentPerform over cq_apply_f: every iteration exactly once, nested, inside tasks
/// (C: Tests/c apply tests).
@Suite struct ConcurrentPerformTests {
    @Test func testApplyEachIndexOnce() {
        let iterations = 100_000
        // Each iteration writes only its own slot; the total counts every call.
        nonisolated(unsafe) let hits = UnsafeMutableBufferPointer<Int>.allocate(capacity: iterations)
        hits.initialize(repeating: 0)
        defer { hits.deallocate() }
        let total = Counter()
        SQQueue.concurrentPerform(iterations: iterations) { i in
            hits[i] += 1
            total.add()
        }
        #expect(total.value == iterations)
        #expect(hits.allSatisfy { $0 == 1 })
    }

    /// The shape Dispatch code uses in the Swift 6 language mode (each iteration writes its
    /// own element through the buffer of `withUnsafeMutableBufferPointer`, named
    /// `nonisolated(unsafe)`) compiles unchanged: the closure is `@Sendable`, as the overlay's
    /// is. (It was not, and a closure that wrote an actor's state from every iteration
    /// compiled without a word, where Dispatch rejects it: "actor-isolated property can not be
    /// mutated from a Sendable closure".)
    @Test func testWritesThroughACapturedBuffer() {
        var squares = [Int](repeating: 0, count: 10_000)
        squares.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let buffer = buffer
            SQQueue.concurrentPerform(iterations: buffer.count) { i in
                buffer[i] = i * i
            }
        }
        #expect(squares.enumerated().allSatisfy { $0.element == $0.offset * $0.offset })
    }

    @Test func testApplyZeroAndOneIterations() {
        let counter = Counter()
        SQQueue.concurrentPerform(iterations: 0) { _ in counter.add() }
        #expect(counter.value == 0)
        SQQueue.concurrentPerform(iterations: 1) { i in counter.add(i + 1) }
        #expect(counter.value == 1)
    }

    @Test func testApplyNested() {
        let counter = Counter()
        SQQueue.concurrentPerform(iterations: 20) { _ in
            SQQueue.concurrentPerform(iterations: 50) { _ in counter.add() }
        }
        #expect(counter.value == 1_000)
    }

    @Test func testApplyInTasks() {
        // Applies from inside work items complete even when every worker is busy with them.
        let counter = Counter()
        let group = SQGroup()
        for _ in 0..<8 {
            SQQueue.global().async(group: group) {
                SQQueue.concurrentPerform(iterations: 1_000) { _ in counter.add() }
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 8_000)
    }

    @Test func testApplySumMatches() {
        let sum = Counter()
        SQQueue.concurrentPerform(iterations: 10_001) { i in sum.add(i) }
        #expect(sum.value == 10_000 * 10_001 / 2)
    }
}
