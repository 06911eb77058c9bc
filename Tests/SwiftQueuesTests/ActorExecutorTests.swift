import SwiftQueues
import Testing

/// An actor whose executor is a serial queue of ours.
actor QueueActor {
    let queue: SQSerialQueue
    var value = 0
    var log: [Int] = []

    init(queue: SQSerialQueue) {
        self.queue = queue
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        queue.asUnownedSerialExecutor()
    }

    /// Whether the method body runs on the actor's queue (the C core's own notion of it).
    func runsOnQueue() -> Bool {
        queue.isIsolatingCurrentContext() == true
    }

    func increment() {
        value += 1
    }

    func increment(inside occupancy: Occupancy) {
        occupancy.during {
            value += 1
            busyWork()
        }
    }

    func append(_ entry: Int) {
        log.append(entry)
    }

    /// Submits a closure that appends `queued` to the queue, then calls `other` (on the same
    /// queue), which appends `called`: the log shows whether the call ran in place (before the
    /// closure) or was submitted behind it.
    func callAfterQueueing(_ other: QueueActor, log: Log<Int>, queued: Int, called: Int) async {
        queue.async { log.append(queued) }
        await other.appendTo(log, called)
    }

    func appendTo(_ log: Log<Int>, _ entry: Int) {
        log.append(entry)
    }

    /// Calls `other` and increments on return: exercises hops between two queue executors.
    func bounce(off other: QueueActor, times: Int) async {
        for _ in 0..<times {
            await other.increment()
            value += 1
        }
    }
}

/// `SQSerialQueue` as a `SerialExecutor`: actors on our queues, isolation checks backed by the
/// C core's queue assertion.
@Suite struct ActorExecutorTests {
    @Test func testQueueKinds() {
        #expect(SQQueue(label: "kinds-serial") is SQSerialQueue)
        #expect(SQQueue(label: "kinds-concurrent", attributes: .concurrent) is SQConcurrentQueue)
        #expect(SQQueue.global() is SQConcurrentQueue)
        // The type system keeps concurrent queues away from actors.
        #expect(!isSerialExecutor(SQConcurrentQueue.self))
        #expect(isSerialExecutor(SQSerialQueue.self))
        #expect(isTaskExecutor(SQConcurrentQueue.self))
        #expect(isTaskExecutor(SQSerialQueue.self))
    }

    @Test func testActorMethodsRunOnItsQueue() async {
        let queue = SQSerialQueue(label: "actor-home")
        let actor = QueueActor(queue: queue)
        #expect(await actor.runsOnQueue())
        #expect(queue.isIsolatingCurrentContext() == false)
    }

    @Test func testActorIsExclusiveUnderConcurrentCallers() async {
        let actor = QueueActor(queue: SQSerialQueue(label: "actor-exclusive"))
        let callers = 8
        let calls = 2_000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    for _ in 0..<calls {
                        await actor.increment()
                    }
                }
            }
        }
        #expect(await actor.value == callers * calls)
    }

    @Test func testActorWorkInterleavesWithQueueWorkInOrder() async {
        // Jobs of the actor and plain closures share the queue's FIFO order.
        let queue = SQSerialQueue(label: "actor-fifo")
        let actor = QueueActor(queue: queue)
        await actor.append(0)
        let done = SQSemaphore(value: 0)
        queue.async {
            actor.assumeIsolated { $0.append(1) }
        }
        queue.async {
            actor.assumeIsolated { $0.append(2) }
            done.signal()
        }
        try? await done.waitForSignal()
        await actor.append(3)
        #expect(await actor.log == [0, 1, 2, 3])
    }

    @Test func testPingPongBetweenQueueActors() async {
        let a = QueueActor(queue: SQSerialQueue(label: "ping"))
        let b = QueueActor(queue: SQSerialQueue(label: "pong"))
        await a.bounce(off: b, times: 1_000)
        #expect(await a.value == 1_000)
        #expect(await b.value == 1_000)
    }

    /// A call between two actors that share a queue runs in place, on the same job, as the
    /// runtime does between two default actors: not as a submission behind the queue's other
    /// work (every such call was one, 6x slower than a Dispatch-based executor).
    @Test(arguments: [false, true])
    func testCallBetweenActorsSharingAQueueRunsInPlace(onMain: Bool) async {
        let queue = onMain ? SQQueue.main : SQSerialQueue(label: "actor-shared")
        let a = QueueActor(queue: queue), b = QueueActor(queue: queue)
        let log = Log<Int>()
        for round in 0..<20 {
            await a.callAfterQueueing(b, log: log, queued: 2 * round + 1, called: 2 * round)
        }
        queue.sync {}
        #expect(log.values == Array(0..<40))
    }

    @Test func testAssumeIsolatedFromPlainClosureOnTheQueue() {
        let queue = SQSerialQueue(label: "assume")
        let actor = QueueActor(queue: queue)
        let value = queue.sync {
            actor.assumeIsolated { actor -> Int in
                actor.value += 41
                return actor.value + 1
            }
        }
        #expect(value == 42)
        let done = SQSemaphore(value: 0)
        let seen = Counter()
        queue.async {
            actor.preconditionIsolated()
            actor.assumeIsolated { _ = seen.add($0.value) }
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(seen.value == 41)
    }

    @Test func testIsolationThroughATargetingQueue() {
        // Work of a queue that targets the actor's queue runs on it, exclusively.
        let queue = SQSerialQueue(label: "assume-root")
        let child = SQQueue(label: "assume-child", attributes: .concurrent, target: queue)
        let actor = QueueActor(queue: queue)
        let passed = child.sync {
            actor.assumeIsolated { $0.value += 1 }
            return queue.isIsolatingCurrentContext()
        }
        #expect(passed == true)
    }

    @Test func testIsIsolatingCurrentContext() {
        let queue = SQSerialQueue(label: "isolating")
        let other = SQSerialQueue(label: "isolating-other")
        #expect(queue.isIsolatingCurrentContext() == false)
        #expect(queue.sync { queue.isIsolatingCurrentContext() } == true)
        #expect(other.sync { queue.isIsolatingCurrentContext() } == false)
        queue.sync { queue.checkIsolated() }
    }

    @Test func testPreconditionIsolatedFailsOffTheQueue() async {
        await #expect(processExitsWith: .failure) {
            let actor = QueueActor(queue: SQSerialQueue(label: "elsewhere"))
            SQSerialQueue(label: "not-the-actor").sync {
                actor.preconditionIsolated()
            }
        }
    }

    @Test func testAssumeIsolatedFailsOffTheQueue() async {
        await #expect(processExitsWith: .failure) {
            assumeIsolatedOffTheQueue()
        }
    }

    @Test func testCheckIsolatedNamesTheQueue() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let queue = SQSerialQueue(label: "checked-queue")
            SQSerialQueue(label: "running-queue").sync { queue.checkIsolated() }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("checked-queue"))
        #expect(message.contains("running-queue"))
    }

    @Test func testActorOnAQueueTargetingAnother() async {
        // A serial queue that targets another serial queue still runs the actor exclusively;
        // the root queue's own work never runs at the same time.
        let root = SQSerialQueue(label: "actor-root")
        let actor = QueueActor(queue: SQSerialQueue(label: "actor-leaf", target: root))
        let inside = Occupancy()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<200 {
                        await actor.increment(inside: inside)
                    }
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    root.sync { inside.during { busyWork() } }
                }
            }
        }
        #expect(await actor.value == 800)
        #expect(inside.peak.value == 1)
    }
}

private func isSerialExecutor(_ type: Any.Type) -> Bool {
    type is any SerialExecutor.Type
}

private func isTaskExecutor(_ type: Any.Type) -> Bool {
    type is any TaskExecutor.Type
}

/// Claims isolation to an actor on a queue the caller does not run on (stops the process).
private func assumeIsolatedOffTheQueue() {
    let actor = QueueActor(queue: SQSerialQueue(label: "elsewhere-assume"))
    actor.assumeIsolated { $0.value += 1 }
}
