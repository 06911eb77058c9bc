import Testing
import SwiftQueues

/// sync: results, errors, ordering with async work, barriers, nesting
/// (C: cq_sync_f / cq_barrier_sync_f in Tests/c).
@Suite struct SyncTests {
    @Test func testSyncReturnsValue() {
        let q = SQQueue(label: "sync-value")
        let value = q.sync { 6 * 7 }
        #expect(value == 42)
        let text: String = q.sync { "on " + q.label }
        #expect(text == "on sync-value")
        let array = SQQueue(label: "sync-array", attributes: .concurrent).sync { Array(0..<5) }
        #expect(array == [0, 1, 2, 3, 4])
    }

    @Test func testSyncRethrows() {
        let q = SQQueue(label: "sync-throw")
        #expect(throws: TestError(code: 7)) {
            try q.sync { () throws -> Int in throw TestError(code: 7) }
        }
        #expect(throws: TestError(code: 8)) {
            try q.sync(flags: .barrier) { () throws -> Void in throw TestError(code: 8) }
        }
        // The queue is usable afterwards, and a throwing closure that succeeds returns its value.
        let value = try? q.sync { () throws -> Int in 5 }
        #expect(value == 5)
    }

    /// Written as for Dispatch: a one-expression closure whose value is ignored (`signal()`
    /// returns an Int) inside a `@Sendable` closure compiles only with Dispatch's non-generic
    /// `sync(execute: () -> Void)`; with the generic `sync` alone the type checker gives up.
    @Test func testSyncOfClosureIgnoringItsValue() {
        let q = SQQueue(label: "sync-void")
        let other = SQQueue(label: "sync-void-other")
        let done = SQSemaphore(value: 0)
        q.async { other.sync { done.signal() } }
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
        let item = SQWorkItem { other.sync { done.signal() } }
        q.async(execute: item)
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success)
    }

    @Test func testSyncMutatesCallerState() {
        // The closure is not @Sendable and may mutate the caller's local state.
        let q = SQQueue(label: "sync-mutate")
        var local = [Int]()
        for i in 0..<10 {
            q.sync { local.append(i) }
        }
        #expect(local == Array(0..<10))
    }

    @Test func testSyncAfterAsync() {
        // sync onto a busy serial queue waits for the work submitted before it.
        let q = SQQueue(label: "sync-fifo")
        let counter = Counter()
        for _ in 0..<5_000 {
            q.async { counter.add() }
        }
        #expect(q.sync { counter.value } == 5_000)
    }

    @Test func testSyncRunsOnQueue() {
        let q = SQQueue(label: "sync-on")
        let key = SQSpecificKey<String>()
        q.setSpecific(key: key, value: "mine")
        #expect(SQQueue.getSpecific(key: key) == nil)
        #expect(q.sync { SQQueue.getSpecific(key: key) } == "mine")
        q.sync { sqPrecondition(.onQueue(q)) }
    }

    @Test func testNestedSync() {
        let outer = SQQueue(label: "outer")
        let inner = SQQueue(label: "inner")
        let key = SQSpecificKey<String>()
        outer.setSpecific(key: key, value: "outer")
        inner.setSpecific(key: key, value: "inner")
        let seen = outer.sync { () -> [String?] in
            let a = SQQueue.getSpecific(key: key)
            let b = inner.sync { SQQueue.getSpecific(key: key) }
            let c = SQQueue.getSpecific(key: key)
            return [a, b, c]
        }
        #expect(seen == ["outer", "inner", "outer"])
    }

    @Test func testSyncGlobal() {
        let value = SQQueue.global(priority: .high).sync { 99 }
        #expect(value == 99)
        #expect(throws: TestError(code: 1)) {
            try SQQueue.global().sync { () throws -> Void in throw TestError(code: 1) }
        }
    }

    @Test func testSyncFromWorkers() {
        // Concurrent syncs onto one serial queue are mutually exclusive and none is lost.
        let q = SQQueue(label: "sync-many")
        let occupancy = Occupancy()
        let counter = Counter()
        SQQueue.concurrentPerform(iterations: 2_000) { _ in
            q.sync {
                occupancy.during { busyWork() }
                counter.add()
            }
        }
        #expect(counter.value == 2_000)
        #expect(occupancy.peak.value == 1)
    }

    @Test func testSyncWaitsForResume() {
        // A sync onto a suspended queue waits until the queue is resumed.
        let q = SQQueue(label: "sync-suspended")
        q.suspend()
        let calling = SQSemaphore(value: 0)
        let returned = SQSemaphore(value: 0)
        let resumed = Counter()
        let seen = Log<String>()
        SQQueue.global().async {
            calling.signal()
            seen.append(q.sync { resumed.value == 0 ? "ran early" : "ran" })
            returned.signal()
        }
        // The caller is about to sync (an event); then a bounded window, since no event shows
        // that the sync does not return. The closure also records whether the resume came first.
        #expect(calling.wait(timeout: patience()) == .success)
        #expect(returned.wait(timeout: shortly()) == .timedOut)
        #expect(seen.values.isEmpty)
        resumed.add()
        q.resume()
        #expect(returned.wait(timeout: patience()) == .success)
        #expect(seen.values == ["ran"])
    }
}
