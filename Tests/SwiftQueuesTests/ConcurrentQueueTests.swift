import Testing
import SwiftQueues

/// Concurrent queues: parallelism, barriers, sync alongside other work
/// (C: Tests/c/test_queue_concurrent.c).
@Suite struct ConcurrentQueueTests {
    @Test func testTasksRunInParallel() {
        let q = SQQueue(label: "conc", attributes: .concurrent)
        #expect(meetingCount(on: q, and: q) == 2)
    }

    @Test func testBarrierExclusion() {
        let q = SQQueue(label: "barrier", attributes: .concurrent)
        let rounds = 100
        let perRound = 100
        let active = Counter()
        let inBarrier = Counter()
        let finished = Counter()
        let violations = Counter()
        let seen = Log<(round: Int, finished: Int)>()
        for round in 0..<rounds {
            for _ in 0..<perRound {
                q.async {
                    active.add()
                    if inBarrier.value != 0 { violations.add() }
                    if inBarrier.value != 0 { violations.add() }
                    finished.add()
                    active.add(-1)
                }
            }
            q.async(flags: .barrier) {
                if inBarrier.add() != 0 || active.value != 0 { violations.add() }
                // Everything before the barrier has finished; nothing after it has started.
                seen.append((round, finished.value))
                if active.value != 0 { violations.add() }
                inBarrier.add(-1)
            }
        }
        q.sync(flags: .barrier) {}
        #expect(violations.value == 0)
        #expect(finished.value == rounds * perRound)
        let values = seen.values
        #expect(values.map(\.round) == Array(0..<rounds))
        #expect(values.map(\.finished) == (0..<rounds).map { ($0 + 1) * perRound })
    }

    @Test func testBarrierSyncOrdering() {
        // A barrier sync runs after everything submitted before it, and alone.
        let q = SQQueue(label: "barrier-sync", attributes: .concurrent)
        let finished = Counter()
        let active = Counter()
        for _ in 0..<1_000 {
            q.async {
                active.add()
                finished.add()
                active.add(-1)
            }
        }
        let (seenFinished, seenActive) = q.sync(flags: .barrier) { (finished.value, active.value) }
        #expect(seenFinished == 1_000)
        #expect(seenActive == 0)
    }

    @Test func testSyncRunsAlongside() {
        // A plain sync onto a concurrent queue runs while another work item of it is running:
        // the running item waits for a signal only the sync sends.
        let q = SQQueue(label: "alongside", attributes: .concurrent)
        let started = SQSemaphore(value: 0)
        let release = SQSemaphore(value: 0)
        let group = SQGroup()
        let outcome = Log<SQTimeoutResult>()
        q.async(group: group) {
            started.signal()
            outcome.append(release.wait(timeout: patience()))
        }
        #expect(started.wait(timeout: patience()) == .success)
        let value = q.sync { () -> Int in
            release.signal()
            return 42
        }
        #expect(value == 42)
        #expect(group.wait(timeout: patience()) == .success)
        #expect(outcome.values == [.success])
    }

    @Test func testGlobalBarrierIsPlain() {
        // On a global queue a barrier does not wait for the running work: it runs alongside.
        let global = SQQueue.global()
        let blocked = SQSemaphore(value: 0)
        let started = SQSemaphore(value: 0)
        let group = SQGroup()
        let outcome = Log<SQTimeoutResult>()
        global.async(group: group) {
            started.signal()
            outcome.append(blocked.wait(timeout: patience()))
        }
        #expect(started.wait(timeout: patience()) == .success)
        global.async(group: group, flags: .barrier) { blocked.signal() }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(outcome.values == [.success])
    }

    @Test func testConcurrentTargetingSerial() {
        // A concurrent queue that targets a serial queue runs one item at a time.
        let serial = SQQueue(label: "root-serial")
        let q = SQQueue(label: "conc-on-serial", attributes: .concurrent, target: serial)
        let occupancy = Occupancy()
        let group = SQGroup()
        for _ in 0..<1_000 {
            q.async(group: group) { occupancy.during { busyWork() } }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(occupancy.peak.value == 1)
    }
}
