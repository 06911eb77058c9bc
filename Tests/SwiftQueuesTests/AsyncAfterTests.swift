import Testing
import SwiftQueues

/// asyncAfter with closures and work items, on both clocks (C: cq_after_f, cq_after_work_item).
/// Timing is checked only as "not before the deadline": lateness depends on the machine.
@Suite struct AsyncAfterTests {
    @Test func testDeadlineNotEarly() {
        let q = SQQueue(label: "after", attributes: .concurrent)
        let group = SQGroup()
        let early = Counter()
        let ran = Counter()
        for delay in [1, 5, 20, 40] {
            let deadline = SQTime.now() + .milliseconds(delay)
            group.enter()
            q.asyncAfter(deadline: deadline, qos: .background, flags: .detached) {
                if SQTime.now() < deadline { early.add() }
                ran.add()
                group.leave()
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(ran.value == 4)
        #expect(early.value == 0)
    }

    @Test func testWallDeadlineNotEarly() {
        let q = SQQueue(label: "after-wall")
        let group = SQGroup()
        let early = Counter()
        for delay in [1, 30] {
            let deadline = SQWallTime.now() + .milliseconds(delay)
            group.enter()
            q.asyncAfter(wallDeadline: deadline) {
                if SQWallTime.now() < deadline { early.add() }
                group.leave()
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(early.value == 0)
    }

    @Test func testWorkItemForms() {
        let q = SQQueue(label: "after-item")
        let deadline = SQTime.now() + .milliseconds(10)
        let wallDeadline = SQWallTime.now() + .milliseconds(10)
        let early = Counter()
        let onQueue = Counter()
        let item = SQWorkItem {
            sqPrecondition(.onQueue(q))
            if SQTime.now() < deadline { early.add() }
            onQueue.add()
        }
        let wallItem = SQWorkItem {
            sqPrecondition(.onQueue(q))
            if SQWallTime.now() < wallDeadline { early.add() }
            onQueue.add()
        }
        q.asyncAfter(deadline: deadline, execute: item)
        q.asyncAfter(wallDeadline: wallDeadline, execute: wallItem)
        #expect(item.wait(timeout: patience()) == .success)
        #expect(wallItem.wait(timeout: patience()) == .success)
        #expect(onQueue.value == 2)
        #expect(early.value == 0)
    }

    @Test func testOrderOnSerialQueue() {
        // Later deadlines are submitted later; equal deadlines in the order of the calls.
        let q = SQQueue(label: "after-order")
        let log = Log<Int>()
        let done = SQSemaphore(value: 0)
        let base = SQTime.now()
        q.asyncAfter(deadline: base + .milliseconds(30)) {
            log.append(3)
            done.signal()
        }
        let same = base + .milliseconds(10)
        q.asyncAfter(deadline: same) { log.append(1) }
        q.asyncAfter(deadline: same, execute: SQWorkItem { log.append(2) })
        q.asyncAfter(deadline: same) { log.append(2) }
        q.asyncAfter(deadline: base - .seconds(1)) { log.append(0) }  // passed: at once
        #expect(done.wait(timeout: patience()) == .success)
        #expect(log.values == [0, 1, 2, 2, 3])
    }

    @Test func testCancelBeforeDeadline() {
        // A cancelled item finishes at the cancel and never runs, though its timer fires.
        let q = SQQueue(label: "after-cancel")
        let ran = Counter()
        let item = SQWorkItem { ran.add() }
        q.asyncAfter(deadline: SQTime.now() + .milliseconds(20), execute: item)
        item.cancel()
        #expect(item.wait(timeout: SQTime.now()) == .success)
        // A later timer on the same serial queue runs after the cancelled one was reached.
        let later = SQSemaphore(value: 0)
        q.asyncAfter(deadline: SQTime.now() + .milliseconds(40)) { later.signal() }
        #expect(later.wait(timeout: patience()) == .success)
        #expect(ran.value == 0)
    }

    @Test func testBarrierAfterClosure() {
        let q = SQQueue(label: "after-barrier", attributes: .concurrent)
        expectBarrier(on: q) { work in
            q.asyncAfter(deadline: SQTime.now(), flags: .barrier, execute: work)
        }
        expectBarrier(on: q) { work in
            q.asyncAfter(wallDeadline: SQWallTime.now(), flags: .barrier, execute: work)
        }
    }

    @Test func testBarrierAfterWorkItem() {
        let q = SQQueue(label: "after-barrier-item", attributes: .concurrent)
        expectBarrier(on: q) { work in
            q.asyncAfter(deadline: SQTime.now(), execute: SQWorkItem(flags: .barrier, block: work))
        }
        expectBarrier(on: q) { work in
            q.asyncAfter(
                wallDeadline: SQWallTime.now(), execute: SQWorkItem(flags: .barrier, block: work))
        }
    }

    @Test func testClosureReleasedAfterRun() {
        let freed = SQSemaphore(value: 0)
        let ran = SQSemaphore(value: 0)
        do {
            let signal = DeinitSignal(freed)
            SQQueue.global().asyncAfter(deadline: SQTime.now() + .milliseconds(1)) {
                _ = signal
                ran.signal()
            }
        }
        #expect(ran.wait(timeout: patience()) == .success)
        #expect(freed.wait(timeout: patience()) == .success)
    }

    /// A deadline that never comes (distantFuture, now + .never, an infinite delay, on either
    /// clock): the closure never runs, and is released at once, as Dispatch does (it was kept
    /// for ever: found by a user-side probe).
    @Test func testNeverDueClosureIsReleased() {
        let freed = SQSemaphore(value: 0)
        let ran = Counter()
        let queue = SQQueue(label: "never")
        do {
            let signals = (0..<5).map { _ in DeinitSignal(freed) }
            queue.asyncAfter(deadline: .distantFuture) { _ = signals[0]; ran.add() }
            queue.asyncAfter(deadline: .now() + .never) { _ = signals[1]; ran.add() }
            queue.asyncAfter(deadline: .now() + Double.infinity) { _ = signals[2]; ran.add() }
            queue.asyncAfter(wallDeadline: .distantFuture) { _ = signals[3]; ran.add() }
            queue.asyncAfter(deadline: .distantFuture, qos: .utility, flags: .barrier) {
                _ = signals[4]
                ran.add()
            }
        }
        for _ in 0..<5 {
            #expect(freed.wait(timeout: patience()) == .success)
        }
        #expect(ran.value == 0)
    }
}
