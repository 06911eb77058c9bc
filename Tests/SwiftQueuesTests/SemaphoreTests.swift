import Testing
import SwiftQueues

/// Semaphores: timeouts that time out, signal/wait hand-off, counting (C: Tests/c semaphore tests).
@Suite struct SemaphoreTests {
    @Test func testTimeoutRestoresCount() {
        let s = SQSemaphore(value: 0)
        #expect(s.wait(timeout: shortly()) == .timedOut)
        #expect(s.wait(timeout: SQTime.now()) == .timedOut)
        #expect(s.wait(wallTimeout: SQWallTime.now() + 0.05) == .timedOut)
        // The count was restored after each timeout: one signal satisfies exactly one wait.
        s.signal()
        #expect(s.wait(timeout: SQTime.now()) == .success)
        #expect(s.wait(timeout: SQTime.now()) == .timedOut)
    }

    @Test func testCounting() {
        let s = SQSemaphore(value: 3)
        #expect(s.wait(timeout: SQTime.now()) == .success)
        #expect(s.wait(timeout: SQTime.now()) == .success)
        #expect(s.wait(timeout: SQTime.now()) == .success)
        #expect(s.wait(timeout: SQTime.now()) == .timedOut)
        // Give back what we took, or releasing the semaphore aborts.
        for _ in 0..<3 { s.signal() }
    }

    @Test func testSignalWakesSleeper() {
        let s = SQSemaphore(value: 0)
        let started = SQSemaphore(value: 0)
        let woken = SQSemaphore(value: 0)
        let signalled = Counter()
        let early = Counter()
        SQQueue.global().async {
            started.signal()
            s.wait()
            if signalled.value == 0 { early.add() }
            woken.signal()
        }
        #expect(started.wait(timeout: patience()) == .success)
        // The waiter has not been let through yet: a bounded window (no event shows "not yet"),
        // and the waiter checks, once through, that the signal came first.
        #expect(woken.wait(timeout: shortly()) == .timedOut)
        signalled.add()
        s.signal()
        #expect(woken.wait(timeout: patience()) == .success)
        #expect(early.value == 0)
    }

    @Test func testSemaphoreSignalWithoutWaiter() {
        let s = SQSemaphore(value: 0)
        #expect(s.signal() == 0)
        s.wait()
        #expect(s.wait(timeout: SQTime.now()) == .timedOut)
    }

    @Test func testPingPong() {
        let ping = SQSemaphore(value: 0)
        let pong = SQSemaphore(value: 0)
        let rounds = 2_000
        let group = SQGroup()
        SQQueue.global().async(group: group) {
            for _ in 0..<rounds {
                guard ping.wait(timeout: patience()) == .success else { return }
                pong.signal()
            }
        }
        var completed = 0
        for _ in 0..<rounds {
            ping.signal()
            guard pong.wait(timeout: patience()) == .success else { break }
            completed += 1
        }
        #expect(completed == rounds)
        #expect(group.wait(timeout: patience()) == .success)
    }

    @Test func testSemaphoreLimitsConcurrency() {
        let s = SQSemaphore(value: 2)
        let q = SQQueue(label: "limited", attributes: .concurrent)
        let occupancy = Occupancy()
        let group = SQGroup()
        for _ in 0..<200 {
            q.async(group: group) {
                s.wait()
                occupancy.during { busyWork() }
                s.signal()
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(occupancy.peak.value >= 1)
        #expect(occupancy.peak.value <= 2)
    }
}
