import Testing
import SwiftQueues

/// Global queues and the main queue: cached singletons, every priority runs work
/// (C: cq_get_global_queue / cq_get_main_queue).
@Suite struct GlobalQueueTests {
    @Test(arguments: SQQueue.Priority.allCases)
    func testGlobalPriorities(priority: SQQueue.Priority) {
        let q = SQQueue.global(priority: priority)
        #expect(q === SQQueue.global(priority: priority))
        let counter = Counter()
        let group = SQGroup()
        for _ in 0..<1_000 {
            q.async(group: group) { counter.add() }
        }
        #expect(group.wait(timeout: patience()) == .success)
        #expect(counter.value == 1_000)
        q.sync { sqPrecondition(.onQueue(q)) }
    }

    @Test func testGlobalQueuesAreDistinct() {
        let queues = SQQueue.Priority.allCases.map { SQQueue.global(priority: $0) }
        for (i, a) in queues.enumerated() {
            for b in queues[(i + 1)...] {
                #expect(a !== b)
                #expect(a.label != b.label)
            }
        }
        #expect(SQQueue.global() === SQQueue.global(priority: .default))
        #expect(queues.allSatisfy { !$0.label.isEmpty })
    }

    /// Code that names Dispatch's priority type ports by a rename.
    @Test func testGlobalQueuePriorityName() {
        let priority: SQQueue.GlobalQueuePriority = .low
        #expect(SQQueue.global(priority: priority) === SQQueue.global(priority: SQQueue.Priority.low))
    }

    @Test func testGlobalQueueIsConcurrent() {
        let q = SQQueue.global(priority: .high)
        #expect(meetingCount(on: q, and: q) == 2)
    }

    @Test func testMainQueueSingleton() {
        #expect(SQQueue.main === SQQueue.main)
        #expect(!SQQueue.main.label.isEmpty)
        #expect(SQQueue.main !== SQQueue.global())
        // Tests do not run the main queue (runMain never returns), so only check "not on it".
        SQQueue.global().sync { sqPrecondition(.notOnQueue(SQQueue.main)) }
    }
}
