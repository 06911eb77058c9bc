import Testing
import SwiftQueues

/// SQWorkItem: perform, submission (async, sync, group), wait, notify, cancel before and while
/// running, barriers, and the closure's lifetime (C: cq_work_item_*, Tests/c/test_work_item.c).
@Suite struct WorkItemTests {
    @Test func testPerformRunsOnCallerAndFinishes() {
        let counter = Counter()
        let item = SQWorkItem { counter.add() }
        #expect(!item.isCancelled)
        #expect(item.wait(timeout: SQTime.now()) == .timedOut)
        item.perform()
        #expect(counter.value == 1)
        // Finished: every wait form returns at once, any number of times.
        item.wait()
        #expect(item.wait(timeout: SQTime.now()) == .success)
        #expect(item.wait(wallTimeout: SQWallTime.now()) == .success)
        // An item may run again; it stays finished.
        item.perform()
        #expect(counter.value == 2)
        #expect(item.wait(timeout: SQTime.now()) == .success)
    }

    @Test func testWaitTimesOutUntilRun() {
        let item = SQWorkItem {}
        #expect(item.wait(timeout: SQTime.now() + .milliseconds(20)) == .timedOut)
        #expect(item.wait(wallTimeout: SQWallTime.now() + .milliseconds(20)) == .timedOut)
        SQQueue.global().async(execute: item)
        #expect(item.wait(timeout: patience()) == .success)
    }

    @Test func testAsyncWorkItem() {
        let q = SQQueue(label: "item-async")
        let ranOnQueue = Log<Bool>()
        let item = SQWorkItem(qos: .utility, flags: [.detached, .enforceQoS]) {
            ranOnQueue.append(SQQueue.getSpecific(key: itemQueueKey) == "item-async")
        }
        q.setSpecific(key: itemQueueKey, value: "item-async")
        q.async(execute: item)
        item.wait()
        #expect(ranOnQueue.values == [true])
    }

    @Test func testItemDroppedAfterSubmitStillRuns() {
        // The submission holds its own reference: the wrapper may go at once.
        let q = SQQueue(label: "item-dropped")
        let ran = SQSemaphore(value: 0)
        do {
            let item = SQWorkItem { ran.signal() }
            q.suspend()
            q.async(execute: item)
        }
        q.resume()
        #expect(ran.wait(timeout: patience()) == .success)
    }

    @Test func testSyncWorkItem() {
        let q = SQQueue(label: "item-sync")
        let counter = Counter()
        for _ in 0..<100 {
            q.async { counter.add() }
        }
        let seen = Log<Int>()
        let item = SQWorkItem {
            sqPrecondition(.onQueue(q))
            seen.append(counter.value)
        }
        q.sync(execute: item)
        // Ran before sync returned, after everything submitted before it (FIFO).
        #expect(seen.values == [100])
        #expect(item.wait(timeout: SQTime.now()) == .success)
    }

    @Test func testGroupAsyncWorkItem() {
        let q = SQQueue(label: "item-group", attributes: .concurrent)
        let group = SQGroup()
        let counter = Counter()
        let items = (0..<50).map { _ in SQWorkItem { counter.add() } }
        for item in items {
            q.async(group: group, execute: item)
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 50)
        #expect(items.allSatisfy { $0.wait(timeout: SQTime.now()) == .success })
    }

    @Test func testSubmittedManyTimesNotifiesOnce() {
        let q = SQQueue(label: "item-many", attributes: .concurrent)
        let notifyQueue = SQQueue(label: "item-many-notify")
        let group = SQGroup()
        let runs = Counter()
        let notified = Counter()
        let item = SQWorkItem { runs.add() }
        item.notify(queue: notifyQueue) { notified.add() }
        for _ in 0..<10 {
            q.async(group: group, execute: item)
        }
        #expect(group.wait(timeout: patience()) == .success)
        item.perform()
        #expect(runs.value == 11)
        // The notify was submitted when the first run returned; the serial queue's next item
        // runs after it.
        notifyQueue.sync {}
        #expect(notified.value == 1)
    }

    @Test func testNotifyClosureSeesTheRun() {
        let q = SQQueue(label: "item-notify")
        let notifyQueue = SQQueue(label: "item-notify-target")
        let log = Log<String>()
        let done = SQSemaphore(value: 0)
        let item = SQWorkItem { log.append("run") }
        item.notify(qos: .userInitiated, flags: [.assignCurrentContext], queue: notifyQueue) {
            sqPrecondition(.onQueue(notifyQueue))
            log.append("notify")
            done.signal()
        }
        #expect(done.wait(timeout: SQTime.now()) == .timedOut)  // not before the item ran
        q.async(execute: item)
        #expect(done.wait(timeout: patience()) == .success)
        #expect(log.values == ["run", "notify"])
        // Registered after the item finished: submitted at once.
        item.notify(queue: notifyQueue) { done.signal() }
        #expect(done.wait(timeout: patience()) == .success)
    }

    @Test func testNotifyWorkItem() {
        let q = SQQueue(label: "item-notify-item")
        let log = Log<String>()
        let first = SQWorkItem { log.append("first") }
        let second = SQWorkItem {
            sqPrecondition(.onQueue(q))
            log.append("second")
        }
        let skipped = SQWorkItem { log.append("skipped") }
        first.notify(queue: q, execute: second)
        first.notify(queue: q, execute: skipped)
        skipped.cancel()
        SQQueue.global().async(execute: first)
        #expect(second.wait(timeout: patience()) == .success)
        q.sync {}  // the skipped item's submission has been reached
        #expect(log.values == ["first", "second"])
    }

    @Test func testCancelBeforeStart() {
        let q = SQQueue(label: "item-cancel")
        let ran = Counter()
        let notified = SQSemaphore(value: 0)
        let item = SQWorkItem { ran.add() }
        item.notify(queue: q) { notified.signal() }
        item.cancel()
        #expect(item.isCancelled)
        // Finished at the cancel: the wait returns, the notify fires, without any submission.
        #expect(item.wait(timeout: patience()) == .success)
        item.wait()
        #expect(notified.wait(timeout: patience()) == .success)
        // It never runs: not submitted, not performed, not synced.
        q.async(execute: item)
        item.perform()
        q.sync(execute: item)
        let group = SQGroup()
        q.async(group: group, execute: item)
        #expect(group.wait(timeout: patience()) == .success)
        #expect(ran.value == 0)
        item.cancel()  // idempotent
        #expect(item.isCancelled)
    }

    @Test func testCancelWhileQueued() {
        // Submitted, then cancelled before its turn: the queued submission returns at once.
        let q = SQQueue(label: "item-cancel-queued")
        let gate = SQSemaphore(value: 0)
        let ran = Counter()
        let notified = SQSemaphore(value: 0)
        q.async { _ = gate.wait(timeout: patience()) }
        let item = SQWorkItem { ran.add() }
        item.notify(queue: SQQueue.global()) { notified.signal() }
        q.async(execute: item)
        item.cancel()
        #expect(item.wait(timeout: patience()) == .success)  // before the queue reaches it
        #expect(notified.wait(timeout: patience()) == .success)
        gate.signal()
        q.sync {}
        #expect(ran.value == 0)
    }

    @Test func testCancelWhileRunning() {
        let q = SQQueue(label: "item-cancel-running")
        let started = SQSemaphore(value: 0)
        let gate = SQSemaphore(value: 0)
        let sawCancel = Log<Bool>()
        let notified = SQSemaphore(value: 0)
        let box = ItemBox()
        let item = SQWorkItem {
            started.signal()
            _ = gate.wait(timeout: patience())
            sawCancel.append(box.item?.isCancelled ?? false)
        }
        box.item = item
        item.notify(queue: SQQueue.global()) { notified.signal() }
        q.async(execute: item)
        #expect(started.wait(timeout: patience()) == .success)
        item.cancel()
        #expect(item.isCancelled)
        // The run is not interrupted: the item has not finished while it is blocked.
        #expect(item.wait(timeout: SQTime.now()) == .timedOut)
        #expect(notified.wait(timeout: SQTime.now()) == .timedOut)
        gate.signal()
        #expect(item.wait(timeout: patience()) == .success)
        #expect(notified.wait(timeout: patience()) == .success)
        #expect(sawCancel.values == [true])
        box.item = nil
    }

    @Test func testBarrierWorkItemAsync() {
        let q = SQQueue(label: "item-barrier", attributes: .concurrent)
        expectBarrier(on: q) { work in q.async(execute: SQWorkItem(flags: .barrier, block: work)) }
        expectBarrier(on: q) { work in
            q.async(group: SQGroup(), execute: SQWorkItem(flags: .barrier, block: work))
        }
    }

    @Test func testBarrierWorkItemOrdering() {
        // Items before the barrier have all finished when it starts; items after it wait.
        let q = SQQueue(label: "item-barrier-order", attributes: .concurrent)
        let active = Counter()
        let finished = Counter()
        let inBarrier = Counter()
        let violations = Counter()
        let seen = Log<Int>()
        let group = SQGroup()
        let barrier = SQWorkItem(flags: .barrier) {
            sqPrecondition(.onQueueAsBarrier(q))
            inBarrier.add()
            if active.value != 0 { violations.add() }
            seen.append(finished.value)
            busyWork()
            inBarrier.add(-1)
        }
        for round in 0..<20 {
            for _ in 0..<50 {
                q.async(group: group) {
                    active.add()
                    if inBarrier.value != 0 { violations.add() }
                    busyWork()
                    finished.add()
                    active.add(-1)
                }
            }
            if round % 2 == 0 {
                q.async(group: group, execute: barrier)
            } else {
                q.sync(execute: barrier)
            }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(violations.value == 0)
        #expect(seen.values == (1...20).map { $0 * 50 })
    }

    @Test func testBarrierNotifyIsQueuedWhenTheItemFinishes() {
        // Reader/writer: the writer, a barrier item notified when `item` finishes, is queued as
        // a barrier then, so a reader submitted after that runs after it. (It used to hop
        // through a global queue first, and the second reader ran beside the first one.)
        let q = SQQueue(label: "item-notify-writer", attributes: .concurrent)
        let order = Log<String>()
        let readerStarted = SQSemaphore(value: 0)
        let releaseReader = SQSemaphore(value: 0)
        let group = SQGroup()
        q.async(group: group) {
            readerStarted.signal()
            _ = releaseReader.wait(timeout: patience())
            order.append("reader")
        }
        #expect(readerStarted.wait(timeout: patience()) == .success)
        let item = SQWorkItem {}
        let writer = SQWorkItem(flags: .barrier) { order.append("writer") }
        item.notify(queue: q, execute: writer)
        item.perform()
        q.async(group: group) { order.append("second reader") }
        releaseReader.signal()
        #expect(group.wait(timeout: patience()) == .success)
        #expect(writer.wait(timeout: patience()) == .success)
        #expect(order.values == ["reader", "writer", "second reader"])
    }

    @Test func testBarrierNotify() {
        let q = SQQueue(label: "item-barrier-notify", attributes: .concurrent)
        expectBarrier(on: q) { work in
            let item = SQWorkItem {}
            item.notify(flags: .barrier, queue: q, execute: work)
            item.perform()
        }
        expectBarrier(on: q) { work in
            let item = SQWorkItem {}
            item.perform()
            item.notify(queue: q, execute: SQWorkItem(flags: .barrier, block: work))
        }
        expectBarrier(on: q) { work in
            SQGroup().notify(flags: .barrier, queue: q, execute: work)
        }
        expectBarrier(on: q) { work in
            SQGroup().notify(queue: q, work: SQWorkItem(flags: .barrier, block: work))
        }
    }

    @Test func testClosureReleasedWithItem() {
        let freed = SQSemaphore(value: 0)
        let q = SQQueue(label: "item-release")
        do {
            // Never run.
            let signal = DeinitSignal(freed)
            _ = SQWorkItem { _ = signal }
        }
        #expect(freed.wait(timeout: patience()) == .success)
        do {
            // Run through a queue and dropped right after the submission.
            let signal = DeinitSignal(freed)
            q.async(execute: SQWorkItem { _ = signal })
        }
        #expect(freed.wait(timeout: patience()) == .success)
        do {
            // Performed several times.
            let signal = DeinitSignal(freed)
            let item = SQWorkItem { _ = signal }
            item.perform()
            item.perform()
        }
        #expect(freed.wait(timeout: patience()) == .success)
        do {
            // Cancelled while queued behind a suspended queue.
            let signal = DeinitSignal(freed)
            let item = SQWorkItem { _ = signal }
            q.suspend()
            q.async(execute: item)
            item.cancel()
            q.resume()
        }
        #expect(freed.wait(timeout: patience()) == .success)
        do {
            // Notify closures and notified items.
            let signal = DeinitSignal(freed)
            let other = DeinitSignal(freed)
            let item = SQWorkItem {}
            item.notify(queue: q) { _ = signal }
            item.notify(queue: q, execute: SQWorkItem(flags: .barrier) { _ = other })
            item.perform()
        }
        #expect(freed.wait(timeout: patience()) == .success)
        #expect(freed.wait(timeout: patience()) == .success)
    }

    /// The closure lives inside the C item and goes with the item's last reference, on the
    /// thread that drops it, as with DispatchWorkItem (no hop through a queue).
    @Test func testClosureReleasedSynchronouslyByLastReference() {
        final class Captured: Sendable {}
        weak var weakCaptured: Captured?
        do {
            let captured = Captured()
            weakCaptured = captured
            let item = SQWorkItem { _ = captured }
            item.perform()
            #expect(weakCaptured != nil)
        }
        #expect(weakCaptured == nil)
    }

    @Test func testFlagsHaveDispatchValues() {
        // The C core's CQ_WORK_ITEM_* values, which are libdispatch's DISPATCH_BLOCK_* values.
        #expect(SQWorkItemFlags.barrier.rawValue == 0x1)
        #expect(SQWorkItemFlags.detached.rawValue == 0x2)
        #expect(SQWorkItemFlags.assignCurrentContext.rawValue == 0x4)
        #expect(SQWorkItemFlags.noQoS.rawValue == 0x8)
        #expect(SQWorkItemFlags.inheritQoS.rawValue == 0x10)
        #expect(SQWorkItemFlags.enforceQoS.rawValue == 0x20)
        // Every flag is accepted (the C core rejects unknown ones).
        let all: SQWorkItemFlags = [
            .barrier, .detached, .assignCurrentContext, .noQoS, .inheritQoS, .enforceQoS,
        ]
        let counter = Counter()
        SQWorkItem(flags: all) { counter.add() }.perform()
        #expect(counter.value == 1)
    }

    @Test func testUnknownFlagStops() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            _ = SQWorkItem(flags: [.barrier, SQWorkItemFlags(rawValue: 0x100)]) {}
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("SQWorkItem(flags:): unknown flags 0x100"))
    }
}

/// The key under which work-item tests label their queues.
let itemQueueKey = SQSpecificKey<String>()

/// Lets a work item's closure reach the item itself (set after creation, cleared at the end).
final class ItemBox: @unchecked Sendable {
    // Written before the item is submitted and after it finished; read by the item's run.
    var item: SQWorkItem?
}

/// Submits, with `submit`, a closure to the concurrent queue `q` while a plain work item of `q`
/// is running, and checks that the closure runs as a barrier: not while that item runs. The
/// running item cannot finish until the check is over, so "not while" is a bounded window (as
/// for any negative); the closure also records, whenever it runs, whether the item had
/// finished.
func expectBarrier(
    on q: SQQueue,
    sourceLocation: SourceLocation = #_sourceLocation,
    submit: (@escaping @Sendable () -> Void) -> Void
) {
    let started = SQSemaphore(value: 0)
    let gate = SQSemaphore(value: 0)
    let blockerDone = Counter()
    q.async {
        started.signal()
        _ = gate.wait(timeout: patience())
        blockerDone.add()
    }
    #expect(started.wait(timeout: patience()) == .success, sourceLocation: sourceLocation)
    let ran = SQSemaphore(value: 0)
    let sawBlockerDone = Log<Bool>()
    submit {
        sawBlockerDone.append(blockerDone.value == 1)
        ran.signal()
    }
    let early = ran.wait(timeout: shortly()) == .success
    #expect(!early, "ran while an earlier work item was running", sourceLocation: sourceLocation)
    gate.signal()
    if !early {
        #expect(ran.wait(timeout: patience()) == .success, sourceLocation: sourceLocation)
    }
    #expect(sawBlockerDone.values == [true], sourceLocation: sourceLocation)
}
