import Testing
import SwiftQueues

/// Serial queues: FIFO order, mutual exclusion, different serial queues in parallel
/// (C: Tests/c/test_queue_serial.c).
@Suite struct SerialQueueTests {
    @Test func testSerialFIFO() {
        let q = SQQueue(label: "fifo")
        let log = Log<Int>()
        for i in 0..<10_000 {
            q.async { log.append(i) }
        }
        q.sync {}
        #expect(log.values == Array(0..<10_000))
    }

    @Test func testSerialMutualExclusion() {
        let q = SQQueue(label: "exclusion")
        let occupancy = Occupancy()
        let group = SQGroup()
        for _ in 0..<2_000 {
            q.async(group: group) {
                occupancy.during {
                    busyWork()
                }
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(occupancy.peak.value == 1)
    }

    @Test func testManyProducersOrder() {
        // Every producer's own items stay in its submission order.
        let q = SQQueue(label: "producers")
        let log = Log<(producer: Int, index: Int)>()
        let producers = 4
        let perProducer = 2_000
        SQQueue.concurrentPerform(iterations: producers) { p in
            for i in 0..<perProducer {
                q.async { log.append((p, i)) }
            }
        }
        q.sync {}
        let values = log.values
        #expect(values.count == producers * perProducer)
        for p in 0..<producers {
            #expect(values.filter { $0.producer == p }.map(\.index) == Array(0..<perProducer))
        }
    }

    @Test func testSerialQueuesInParallel() {
        // Two serial queues meet each other: each waits for a signal only the other sends.
        let a = SQQueue(label: "parallel-a")
        let b = SQQueue(label: "parallel-b")
        #expect(meetingCount(on: a, and: b) == 2)
    }

    @Test func testSubmitToSelf() {
        // Work submitted from inside a work item runs after it, on the same queue.
        let q = SQQueue(label: "self")
        let log = Log<String>()
        let done = SQSemaphore(value: 0)
        q.async {
            q.async {
                sqPrecondition(.onQueue(q))
                log.append("inner")
                done.signal()
            }
            log.append("outer")
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(log.values == ["outer", "inner"])
    }

    @Test func testQueueLabel() {
        #expect(SQQueue(label: "com.example.label").label == "com.example.label")
        #expect(SQQueue(label: "").label == "")
        #expect(SQQueue(label: "ünïcødé").label == "ünïcødé")
    }

    @Test func testQueueReleasedWithPendingWork() {
        // Dropping the last wrapper reference does not drop queued work.
        let counter = Counter()
        let group = SQGroup()
        let gate = SQSemaphore(value: 0)
        do {
            let q = SQQueue(label: "released")
            q.async { _ = gate.wait(timeout: patience()) }
            for _ in 0..<100 {
                q.async(group: group) { counter.add() }
            }
        }
        gate.signal()
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 100)
    }

    @Test func testClosureReleasedAfterRun() {
        // The box carrying the closure, and everything the closure captured, is freed once it ran.
        let q = SQQueue(label: "box")
        let freed = SQSemaphore(value: 0)
        let ran = Counter()
        do {
            let token = DeinitSignal(freed)
            q.async { _ = token; ran.add() }
        }
        #expect(freed.wait(timeout: patience()) == .success)
        #expect(ran.value == 1)
    }
}
