import Testing
import SwiftQueues

/// suspend / resume: counted, between work items, through targets (C: cq_suspend, cq_resume).
@Suite struct SuspendResumeTests {
    @Test func testSuspendHoldsTasks() {
        let q = SQQueue(label: "suspend")
        q.suspend()
        let counter = Counter()
        let group = SQGroup()
        for _ in 0..<100 {
            q.async(group: group) { counter.add() }
        }
        // Nothing runs while suspended: the wait must time out.
        #expect(group.wait(timeout: shortly()) == .timedOut)
        #expect(counter.value == 0)
        q.resume()
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 100)
    }

    @Test func testSuspendIsCounted() {
        let q = SQQueue(label: "suspend-counted")
        q.suspend()
        q.suspend()
        let ran = SQSemaphore(value: 0)
        q.async { ran.signal() }
        q.resume()
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        q.resume()
        #expect(ran.wait(timeout: patience()) == .success)
    }

    @Test func testSuspendBetweenTasks() {
        // Suspending from inside a work item lets it finish, but stops the next one.
        let q = SQQueue(label: "suspend-inside")
        let log = Log<Int>()
        let first = SQSemaphore(value: 0)
        let second = SQSemaphore(value: 0)
        q.async {
            q.suspend()
            log.append(1)
            first.signal()
        }
        q.async {
            log.append(2)
            second.signal()
        }
        #expect(first.wait(timeout: patience()) == .success)
        #expect(second.wait(timeout: shortly()) == .timedOut)
        #expect(log.values == [1])
        q.resume()
        #expect(second.wait(timeout: patience()) == .success)
        #expect(log.values == [1, 2])
    }

    @Test func testSuspendedTargetStopsChildren() {
        let root = SQQueue(label: "suspend-root")
        let child = SQQueue(label: "suspend-child", target: root)
        root.suspend()
        let ran = SQSemaphore(value: 0)
        child.async { ran.signal() }
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        root.resume()
        #expect(ran.wait(timeout: patience()) == .success)
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
