import SwiftQueues
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The name of the calling thread (the C core names its threads `cq-worker-N`, `cq-high-N`...).
func currentThreadName() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
        return ""
    }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 32)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else {
        return ""
    }
    return String(decoding: buffer.prefix(count).filter { $0 != 10 }, as: UTF8.self)
}

/// Whether the caller runs on one of the C core's pool threads.
func onOurPool() -> Bool {
    currentThreadName().hasPrefix("cq-")
}

private let marker = SQSpecificKey<String>()

/// A queue marked with a specific value, so that work can tell it runs there.
private func markedQueue(_ label: String, concurrent: Bool) -> SQQueue {
    let queue: SQQueue =
        concurrent ? SQConcurrentQueue(label: label) : SQSerialQueue(label: label)
    queue.setSpecific(key: marker, value: label)
    return queue
}

private func runningOn() -> String? {
    SQQueue.getSpecific(key: marker)
}

/// Our queues as task executors: `withTaskExecutorPreference`, `Task(executorPreference:)`,
/// `addTask(executorPreference:)`, and the preference reaching nested child tasks.
@Suite struct ConcurrencyTaskExecutorTests {
    @Test func testPreferenceRunsChildTasksOnThePool() async {
        let onPool = await withTaskExecutorPreference(SQQueue.global()) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<64 {
                    group.addTask { onOurPool() }
                }
                var all = true
                for await child in group {
                    all = all && child
                }
                return all
            }
        }
        #expect(onPool)
    }

    @Test func testPreferenceReachesNestedChildTasks() async {
        let queue = markedQueue("nested", concurrent: true)
        let seen = await withTaskExecutorPreference(queue) { () -> [String?] in
            async let direct = runningOn()
            let nested = await withTaskGroup(of: [String?].self) { group in
                group.addTask {
                    // a grandchild through a group, and one through async let
                    async let deeper = runningOn()
                    let grandchildren = await withTaskGroup(of: String?.self) { inner in
                        inner.addTask { runningOn() }
                        var all: [String?] = []
                        for await value in inner {
                            all.append(value)
                        }
                        return all
                    }
                    return grandchildren + [await deeper]
                }
                var all: [String?] = []
                for await values in group {
                    all += values
                }
                return all
            }
            return [await direct] + nested
        }
        #expect(seen == ["nested", "nested", "nested"])
    }

    @Test func testTaskWithExecutorPreference() async {
        let queue = markedQueue("unstructured", concurrent: false)
        let task = Task(executorPreference: queue) { runningOn() }
        #expect(await task.value == "unstructured")
        let detached = Task.detached(executorPreference: queue) { runningOn() }
        #expect(await detached.value == "unstructured")
    }

    @Test func testAddTaskWithExecutorPreference() async {
        let serial = markedQueue("add-serial", concurrent: false)
        let concurrent = markedQueue("add-concurrent", concurrent: true)
        let seen = await withTaskGroup(of: String?.self) { group in
            group.addTask(executorPreference: serial) { runningOn() }
            group.addTask(executorPreference: concurrent) { runningOn() }
            var all: Set<String?> = []
            for await value in group {
                all.insert(value)
            }
            return all
        }
        #expect(seen == ["add-serial", "add-concurrent"])
    }

    @Test func testPreferenceComesBackAfterAnActorHop() async {
        // After a call into an actor on another queue, nonisolated code of a task that prefers
        // our queue continues on that queue.
        let queue = markedQueue("after-hop", concurrent: true)
        let actor = QueueActor(queue: SQSerialQueue(label: "hop-target"))
        let seen = await withTaskExecutorPreference(queue) {
            await withTaskGroup(of: String?.self) { group in
                group.addTask {
                    await actor.increment()
                    return runningOn()
                }
                return await group.next() ?? nil
            }
        }
        #expect(seen == "after-hop")
    }

    @Test func testSerialQueueAsTaskExecutorIsExclusive() async {
        let queue = SQSerialQueue(label: "serial-executor")
        let inside = Occupancy()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask(executorPreference: queue) {
                    inside.during { busyWork() }
                }
            }
        }
        #expect(inside.peak.value == 1)
    }

    @Test func testManyChildrenOnTheGlobalQueues() async {
        let sum = await withTaskGroup(of: Int.self) { group in
            for i in 0..<10_000 {
                let queue = SQQueue.global(priority: SQQueue.Priority.allCases[i % 4])
                group.addTask(executorPreference: queue) { i }
            }
            var sum = 0
            for await value in group {
                sum += value
            }
            return sum
        }
        #expect(sum == (0..<10_000).reduce(0, +))
    }

    /// A `.high` task that prefers `SQQueue.global()` runs in the high band: it does not wait
    /// behind default work that keeps every normal worker busy (the job waited behind all of
    /// it). Spinners (CPU-bound, so the pool adds no thread for them) hold the default band
    /// until the high task has run, or until a shared deadline, which only a stuck task meets.
    @Test(.timeLimit(.minutes(2))) func testHighPriorityJobOnTheDefaultGlobalQueue() async {
        final class Shared: Sendable {
            let ran = Atomic<Bool>(false)
            let timedOut = Atomic<Bool>(false)
        }
        let shared = Shared()
        let deadline = SQTime.now() + .seconds(30)
        let group = SQGroup()
        for _ in 0..<8 {
            SQQueue.global().async(group: group) {
                while !shared.ran.load(ordering: .acquiring) {
                    if SQTime.now() >= deadline {
                        shared.timedOut.store(true, ordering: .relaxed)
                        return
                    }
                }
            }
        }
        await Task(executorPreference: SQQueue.global(), priority: .high) {
            shared.ran.store(true, ordering: .releasing)
        }.value
        try? await group.waitUntilEmpty()
        let timedOut = shared.timedOut.load(ordering: .relaxed)
        #expect(!timedOut)
    }
}
