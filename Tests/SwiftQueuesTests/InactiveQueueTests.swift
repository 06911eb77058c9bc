import Testing
import SwiftQueues

/// `.initiallyInactive` and activate() (C: cq_queue_create_inactive, cq_activate).
@Suite struct InactiveQueueTests {
    @Test(arguments: [SQQueue.Attributes.initiallyInactive, [.initiallyInactive, .concurrent]])
    func testInactiveHoldsWorkUntilActivate(attributes: SQQueue.Attributes) {
        let q = SQQueue(label: "inactive", attributes: attributes)
        let group = SQGroup()
        let activated = Counter()
        let early = Counter()
        let ran = Counter()
        for _ in 0..<10 {
            q.async(group: group) {
                if activated.value == 0 { early.add() }
                ran.add()
            }
        }
        let item = SQWorkItem { ran.add() }
        q.async(group: group, execute: item)
        // Nothing runs before activate(): a bounded window (no event shows "not yet"); each item
        // also checks, whenever it runs, that the activation came first.
        #expect(group.wait(timeout: shortly()) == .timedOut)
        #expect(ran.value == 0)
        activated.add()
        q.activate()
        #expect(group.wait(timeout: patience()) == .success)
        #expect(ran.value == 11)
        #expect(early.value == 0)
        q.activate()  // a no-op on an active queue
        #expect(q.sync { 1 } == 1)
    }

    @Test func testActivateKeepsOrderAndTarget() {
        // Retargeted while inactive; the work accepted meanwhile runs in order, on the target.
        let root = SQQueue(label: "inactive-root")
        let q = SQQueue(label: "inactive-ordered", attributes: .initiallyInactive)
        q.setTarget(queue: root)
        let log = Log<Int>()
        let onRoot = Counter()
        for i in 0..<100 {
            q.async {
                log.append(i)
                if onQueue(root) { onRoot.add() }
            }
        }
        q.activate()
        q.sync {}
        #expect(log.values == Array(0..<100))
        #expect(onRoot.value == 100)
    }

    @Test func testActivateOnActiveQueueDoesNothing() {
        let q = SQQueue(label: "active")
        q.activate()
        q.suspend()
        q.activate()  // does not undo the suspend
        let ran = SQSemaphore(value: 0)
        q.async { ran.signal() }
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        q.resume()
        #expect(ran.wait(timeout: patience()) == .success)
    }

    @Test func testInactiveWithQoS() {
        let q = SQQueue(label: "inactive-qos", qos: .background, attributes: .initiallyInactive)
        q.activate()
        #expect(niceOfWork(on: q) == 19)
    }

    @Test func testReleasingInactiveQueueStops() async {
        // As releasing a suspended queue: the work it holds would never run.
        await #expect(processExitsWith: .failure) {
            _ = SQQueue(label: "inactive-dropped", attributes: .initiallyInactive)
        }
    }
}
