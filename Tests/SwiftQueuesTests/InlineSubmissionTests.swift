import Testing
import CQueueCore
@testable import SwiftQueues

/// `async` without a group carries the closure inside the C task (no box): the closure must
/// fit, run exactly once, and release what it captured once it has run — whether it ran as a
/// plain item or as a barrier, on a serial or a concurrent queue.
@Suite struct InlineSubmissionTests {
    /// What a captured object's deinit reports: it must run once the closure has run.
    final class Witness: Sendable {
        let released: SQSemaphore
        init(_ released: SQSemaphore) { self.released = released }
        deinit { released.signal() }
    }

    @Test func testClosureFitsTheInlineBytes() {
        #expect(MemoryLayout<SQInlineClosure>.size <= Int(CQ_SWIFT_INLINE_BYTES))
        #expect(MemoryLayout<SQInlineClosure>.alignment <= 8)
    }

    @Test func testCapturesAreReleasedAfterTheClosureRan() {
        let q = SQQueue(label: "inline")
        let released = SQSemaphore(value: 0)
        let ran = Counter()
        for _ in 0..<1_000 {
            let witness = Witness(released)
            q.async { withExtendedLifetime(witness) { _ = ran.add() } }
        }
        for _ in 0..<1_000 {
            #expect(released.wait(timeout: patience()) == .success)
        }
        #expect(ran.value == 1_000)
    }

    @Test func testInlineBarrierRunsAlone() {
        let q = SQQueue(label: "inline-barrier", attributes: .concurrent)
        let running = Counter()
        let notAlone = Counter()
        let barriersDone = Counter()
        let group = SQGroup()
        for i in 0..<400 {
            group.enter()
            if i % 10 == 0 {
                q.async(flags: .barrier) {
                    if running.add() != 0 { notAlone.add() }
                    busyWork()
                    if running.add(-1) != 1 { notAlone.add() }
                    barriersDone.add()
                    group.leave()
                }
            } else {
                q.async {
                    running.add()
                    busyWork()
                    running.add(-1)
                    group.leave()
                }
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(barriersDone.value == 40)
        #expect(notAlone.value == 0)
    }

    @Test func testEverySubmissionRunsOnceFromManyThreads() {
        let q = SQQueue(label: "inline-many")
        let ran = Counter()
        SQQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<5_000 {
                q.async { ran.add() }
            }
        }
        q.sync {}
        #expect(ran.value == 40_000)
    }
}
