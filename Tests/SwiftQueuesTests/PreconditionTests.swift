import Testing
import SwiftQueues

/// sqPrecondition over cq_assert_queue / cq_assert_queue_not, and the C core's deadlock
/// detection. Failing checks stop the process, so they run as exit tests (a child process).
@Suite struct PreconditionTests {
    @Test func testAssertQueuePasses() {
        let q = SQQueue(label: "assert")
        let other = SQQueue(label: "assert-other")
        sqPrecondition(.notOnQueue(q))
        let reached = q.sync { () -> Bool in
            sqPrecondition(.onQueue(q))
            sqPrecondition(condition: .notOnQueue(other))
            return true
        }
        #expect(reached)
    }

    @Test func testAssertQueueFailsOffQueue() async {
        await #expect(processExitsWith: .failure) {
            let q = SQQueue(label: "assert-off")
            sqPrecondition(.onQueue(q))
        }
    }

    @Test func testAssertQueueNotFailsOnQueue() async {
        await #expect(processExitsWith: .failure) {
            let q = SQQueue(label: "assert-on")
            q.sync { sqPrecondition(.notOnQueue(q)) }
        }
    }

    @Test func testSyncOntoCurrentQueueIsReported() async {
        // A sync onto the queue the thread is running would deadlock: the C core aborts instead.
        await #expect(processExitsWith: .failure) {
            let q = SQQueue(label: "deadlock")
            q.sync { q.sync {} }
        }
    }

    @Test func testSyncOntoTargetIsReported() async {
        await #expect(processExitsWith: .failure) {
            let root = SQQueue(label: "deadlock-root")
            let child = SQQueue(label: "deadlock-child", target: root)
            child.sync { root.sync {} }
        }
    }

    @Test func testLeaveWithoutEnterIsReported() async {
        await #expect(processExitsWith: .failure) {
            SQGroup().leave()
        }
    }
}
