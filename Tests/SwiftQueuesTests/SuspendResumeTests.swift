import Testing
import SwiftQueues

/// suspend / resume: counted, between work items, through targets (C: cq_suspend, cq_resume).
@Suite struct SuspendResumeTests {
    @Test func testSuspendHoldsTasks() {
        let q = SQQueue(label: "suspend")
        q.suspend()
        let counter = Counter()
        let released = Counter()
        let early = Counter()
        let group = SQGroup()
        for _ in 0..<100 {
            q.async(group: group) {
                if released.value == 0 { early.add() }
                counter.add()
            }
        }
        // Nothing runs while suspended: the wait must time out. No event can show that, so it
        // is a bounded window; each item also checks, whenever it runs, that the resume came
        // first.
        #expect(group.wait(timeout: shortly()) == .timedOut)
        #expect(counter.value == 0)
        released.add()
        q.resume()
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 100)
        #expect(early.value == 0)
    }

    @Test func testSuspendIsCounted() {
        let q = SQQueue(label: "suspend-counted")
        q.suspend()
        q.suspend()
        let ran = SQSemaphore(value: 0)
        let released = Counter()
        let early = Counter()
        q.async {
            if released.value == 0 { early.add() }
            ran.signal()
        }
        q.resume()
        // Still suspended once: a bounded window (no event shows "not yet"), and the item
        // checks that the second resume came first.
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        released.add()
        q.resume()
        #expect(ran.wait(timeout: patience()) == .success)
        #expect(early.value == 0)
    }

    @Test func testSuspendBetweenTasks() {
        // Suspending from inside a work item lets it finish, but stops the next one.
        let q = SQQueue(label: "suspend-inside")
        let log = Log<Int>()
        let first = SQSemaphore(value: 0)
        let second = SQSemaphore(value: 0)
        let released = Counter()
        let early = Counter()
        q.async {
            q.suspend()
            log.append(1)
            first.signal()
        }
        q.async {
            if released.value == 0 { early.add() }
            log.append(2)
            second.signal()
        }
        // The first item has run (an event); the second must not start: a bounded window, and
        // the second item checks that the resume came first.
        #expect(first.wait(timeout: patience()) == .success)
        #expect(second.wait(timeout: shortly()) == .timedOut)
        #expect(log.values == [1])
        released.add()
        q.resume()
        #expect(second.wait(timeout: patience()) == .success)
        #expect(log.values == [1, 2])
        #expect(early.value == 0)
    }

    @Test func testSuspendedTargetStopsChildren() {
        let root = SQQueue(label: "suspend-root")
        let child = SQQueue(label: "suspend-child", target: root)
        root.suspend()
        let ran = SQSemaphore(value: 0)
        let released = Counter()
        let early = Counter()
        child.async {
            if released.value == 0 { early.add() }
            ran.signal()
        }
        // A bounded window (no event shows "not yet"), and the item checks the resume came first.
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        released.add()
        root.resume()
        #expect(ran.wait(timeout: patience()) == .success)
        #expect(early.value == 0)
    }

    @Test func testGlobalQueueIgnoresSuspend() {
        let global = SQQueue.global(priority: .low)
        global.suspend()
        let ran = SQSemaphore(value: 0)
        global.async { ran.signal() }
        let outcome = ran.wait(timeout: patience())
        global.resume()
        #expect(outcome == .success)
    }
}
