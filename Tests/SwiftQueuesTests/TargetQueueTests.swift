import Testing
import SwiftQueues

/// Target queues: hierarchies serialise through a serial root, retargeting, and "on queue"
/// through the chain (C: cq_set_target_queue in Tests/c).
@Suite struct TargetQueueTests {
    @Test func testQueuesSharingASerialTarget() {
        // Several serial queues targeting one serial queue never run at the same time.
        let root = SQQueue(label: "root")
        let children = (0..<4).map { SQQueue(label: "child-\($0)", target: root) }
        let occupancy = Occupancy()
        let group = SQGroup()
        for round in 0..<500 {
            children[round % children.count].async(group: group) {
                occupancy.during { busyWork() }
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(occupancy.peak.value == 1)
    }

    @Test func testTargetKeepsPerQueueFIFO() {
        let root = SQQueue(label: "root-fifo", attributes: .concurrent)
        let child = SQQueue(label: "child-fifo", target: root)
        let log = Log<Int>()
        for i in 0..<2_000 {
            child.async { log.append(i) }
        }
        child.sync {}
        #expect(log.values == Array(0..<2_000))
    }

    @Test func testRetargetQueue() {
        let root = SQQueue(label: "late-root")
        let child = SQQueue(label: "late-child")
        child.setTarget(queue: root)
        let done = SQSemaphore(value: 0)
        let onRoot = Log<Bool>()
        let key = SQSpecificKey<Int>()
        root.setSpecific(key: key, value: 1)
        child.async {
            onRoot.append(SQQueue.getSpecific(key: key) == 1)
            sqPrecondition(.onQueue(root))
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(onRoot.values == [true])
        // Back to the default global queue: the root's key is no longer inherited.
        child.setTarget(queue: nil)
        #expect(child.sync { SQQueue.getSpecific(key: key) } == nil)
    }

    @Test func testSyncTargetChain() {
        // sync onto a child runs on the child and, through it, on the root.
        let root = SQQueue(label: "sync-root")
        let child = SQQueue(label: "sync-child", target: root)
        let counter = Counter()
        for _ in 0..<1_000 {
            root.async { counter.add() }
        }
        let seen = child.sync { () -> Int in
            sqPrecondition(.onQueue(child))
            sqPrecondition(.onQueue(root))
            return counter.value
        }
        #expect(seen == 1_000)
    }
}
