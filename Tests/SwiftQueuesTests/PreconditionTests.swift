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

    @Test func testOnQueueAsBarrierPasses() {
        let serial = SQQueue(label: "barrier-serial")
        let concurrent = SQQueue(label: "barrier-concurrent", attributes: .concurrent)
        let passed = Counter()
        serial.sync {
            sqPrecondition(.onQueueAsBarrier(serial))
            passed.add()
        }
        concurrent.sync(flags: .barrier) {
            sqPrecondition(condition: .onQueueAsBarrier(concurrent))
            passed.add()
        }
        concurrent.sync(execute: SQWorkItem(flags: .barrier) {
            sqPrecondition(.onQueueAsBarrier(concurrent))
            passed.add()
        })
        let group = SQGroup()
        serial.async(group: group) {
            sqPrecondition(.onQueueAsBarrier(serial))
            passed.add()
        }
        concurrent.async(group: group, flags: .barrier) {
            sqPrecondition(.onQueueAsBarrier(concurrent))
            passed.add()
        }
        concurrent.async(group: group, execute: SQWorkItem(flags: .barrier) {
            sqPrecondition(.onQueueAsBarrier(concurrent))
            passed.add()
        })
        #expect(group.wait(timeout: patience()) == .success)
        #expect(passed.value == 6)
    }

    @Test func testOnQueueAsBarrierFailsOffQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            sqPrecondition(.onQueueAsBarrier(SQQueue(label: "exclusive-nowhere")))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains(
            "sqPrecondition(.onQueueAsBarrier): expected to run on queue \"exclusive-nowhere\" "
                + "exclusively, but running on no queue"))
        #expect(message.contains("PreconditionTests.swift:"))
    }

    @Test func testOnQueueAsBarrierFailsInPlainConcurrentWork() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let q = SQQueue(label: "shared", attributes: .concurrent)
            q.sync { sqPrecondition(.onQueueAsBarrier(q), file: "Somewhere.swift", line: 42) }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Somewhere.swift:42"))
        #expect(message.contains(
            "expected to run on queue \"shared\" exclusively, but running on queue \"shared\" "
                + "(alongside other work of it)"))
    }

    @Test func testOnQueueAsBarrierFailsInPlainAsyncWork() async {
        await #expect(processExitsWith: .failure) {
            let q = SQQueue(label: "shared-async", attributes: .concurrent)
            let done = SQSemaphore(value: 0)
            q.async {
                sqPrecondition(.onQueueAsBarrier(q))
                done.signal()
            }
            _ = done.wait(timeout: SQTime.now() + .seconds(60))
        }
    }

    @Test func testOnQueueFailureNamesTheSite() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let q = SQQueue(label: "expected")
            SQQueue(label: "actual").sync {
                sqPrecondition(condition: .onQueue(q), file: "Caller.swift", line: 7)
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Caller.swift:7"))
        #expect(message.contains(
            "sqPrecondition(.onQueue): expected to run on queue \"expected\", but running on "
                + "queue \"actual\""))
    }
}
