import Testing
import SwiftQueues

/// Groups: wait, timeouts, notify, enter/leave, reuse, barriers, fork-join waits inside tasks
/// (C: Tests/c group tests).
@Suite struct GroupTests {
    @Test func testGroupWait() {
        let group = SQGroup()
        let q = SQQueue(label: "group-wait", attributes: .concurrent)
        let counter = Counter()
        for _ in 0..<10_000 {
            q.async(group: group) { counter.add() }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 10_000)
        // The untimed wait returns at once on an empty group.
        group.wait()
        #expect(group.wait(timeout: SQTime.now()) == .success)
    }

    @Test func testGroupWaitEmptyReturnsAtOnce() {
        let group = SQGroup()
        #expect(group.wait(timeout: SQTime.now()) == .success)
        #expect(group.wait(wallTimeout: SQWallTime.now()) == .success)
    }

    @Test func testGroupWaitTimesOut() {
        let group = SQGroup()
        group.enter()
        #expect(group.wait(timeout: shortly()) == .timedOut)
        #expect(group.wait(timeout: SQTime.now()) == .timedOut)
        #expect(group.wait(wallTimeout: SQWallTime.now() + .milliseconds(50)) == .timedOut)
        group.leave()
        #expect(group.wait(timeout: patience()) == .success)
    }

    @Test func testGroupEnterLeave() {
        let group = SQGroup()
        let counter = Counter()
        for _ in 0..<100 {
            group.enter()
            SQQueue.global().async {
                counter.add()
                group.leave()
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 100)
    }

    @Test func testGroupNotify() {
        let group = SQGroup()
        let q = SQQueue(label: "group-notify", attributes: .concurrent)
        let notifyQueue = SQQueue(label: "notified")
        let counter = Counter()
        let gate = SQSemaphore(value: 0)
        let notified = SQSemaphore(value: 0)
        let seen = Log<Int>()
        let gateFinished = Counter()
        let sawGateFinished = Log<Bool>()
        q.async(group: group) {
            _ = gate.wait(timeout: patience())
            gateFinished.add()
        }
        for _ in 0..<1_000 {
            q.async(group: group) { counter.add() }
        }
        group.notify(queue: notifyQueue) {
            sqPrecondition(.onQueue(notifyQueue))
            seen.append(counter.value)
            sawGateFinished.append(gateFinished.value == 1)
            notified.signal()
        }
        // The notify waits for the group: it cannot run while the gate item is outstanding. The
        // notify itself records whether the gate item had finished (a definite check, whenever
        // it runs); the bounded window gives a premature notify the time to show.
        #expect(notified.wait(timeout: shortly()) == .timedOut)
        gate.signal()
        #expect(notified.wait(timeout: patience()) == .success)
        #expect(seen.values == [1_000])
        #expect(sawGateFinished.values == [true])
    }

    @Test func testGroupNotifyWhenEmpty() {
        let group = SQGroup()
        let notified = SQSemaphore(value: 0)
        group.notify(queue: SQQueue.global()) { notified.signal() }
        #expect(notified.wait(timeout: patience()) == .success)
    }

    @Test func testGroupNotifyOrder() {
        let group = SQGroup()
        let q = SQQueue(label: "notify-order")
        let log = Log<Int>()
        let done = SQSemaphore(value: 0)
        group.enter()
        for i in 0..<10 {
            group.notify(queue: q) {
                log.append(i)
                if i == 9 { done.signal() }
            }
        }
        group.leave()
        #expect(done.wait(timeout: patience()) == .success)
        #expect(log.values == Array(0..<10))
    }

    @Test func testGroupReuse() {
        let group = SQGroup()
        let counter = Counter()
        for round in 1...5 {
            for _ in 0..<100 {
                SQQueue.global().async(group: group) { counter.add() }
            }
            #expect(group.wait(timeout: patience()) == .success)
            #expect(counter.value == round * 100)
        }
    }

    @Test func testGroupBarrier() {
        // A barrier submitted with a group is counted by the group and runs alone.
        let group = SQGroup()
        let q = SQQueue(label: "group-barrier", attributes: .concurrent)
        let active = Counter()
        let violations = Counter()
        let finished = Counter()
        let barrierSaw = Log<Int>()
        for _ in 0..<500 {
            q.async(group: group) {
                active.add()
                finished.add()
                active.add(-1)
            }
        }
        q.async(group: group, flags: .barrier) {
            if active.value != 0 { violations.add() }
            barrierSaw.append(finished.value)
        }
        for _ in 0..<500 {
            q.async(group: group) { finished.add() }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(violations.value == 0)
        #expect(barrierSaw.values == [500])
        #expect(finished.value == 1_000)
    }

    @Test func testReleasedGroupAlive() {
        // A group whose wrapper is dropped while work is still counted keeps working.
        let notified = SQSemaphore(value: 0)
        let counter = Counter()
        do {
            let group = SQGroup()
            for _ in 0..<100 {
                SQQueue.global().async(group: group) { counter.add() }
            }
            group.notify(queue: SQQueue.global()) { notified.signal() }
        }
        #expect(notified.wait(timeout: patience()) == .success)
        #expect(counter.value == 100)
    }

    @Test func testForkJoinFib() {
        // Fork-join: every task waits for its children's group. Must complete, not starve.
        @Sendable func fib(_ n: Int) -> Int {
            if n < 2 { return n }
            let group = SQGroup()
            let left = Counter()
            SQQueue.global().async(group: group) { left.add(fib(n - 1)) }
            let right = fib(n - 2)
            group.wait()
            return left.value + right
        }
        let result = Counter()
        let outer = SQGroup()
        SQQueue.global().async(group: outer) { result.add(fib(16)) }
        #expect(outer.wait(timeout: patience()) == .success)
        #expect(result.value == 987)
    }
}
