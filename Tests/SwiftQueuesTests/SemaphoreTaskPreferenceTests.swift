@testable import SwiftQueues
import Synchronization
import Testing

/// `waitForSignal()` promises that a signal prefers waiting tasks to threads blocked in
/// `wait()`. The C signal used to come first: it handed its unit straight to a sleeping thread,
/// and the hand-off to the tasks then found nothing to take back, so while one thread kept
/// waiting the tasks were never served (a user-side probe: the thread got 1,000 of 1,000
/// signals, the ten tasks none).
@Suite struct SemaphoreTaskPreferenceTests {
    @Test func testSignalsServeTasksBeforeAWaitingThread() async {
        let semaphore = SQSemaphore(value: 0)
        let taken = SQSemaphore(value: 0)
        let threadGot = Counter()
        let tasksGot = Counter()
        let stop = Atomic<Bool>(false)
        let threadDone = SQGroup()
        // A thread that keeps waiting, as a consumer thread of a work queue does.
        SQConcurrentQueue(label: "blocked-waiter").async(group: threadDone) {
            while true {
                semaphore.wait()
                if stop.load(ordering: .acquiring) {
                    return
                }
                threadGot.add()
                taken.signal()
            }
        }
        let waiters = 10
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<waiters {
                group.addTask {
                    do {
                        try await semaphore.waitForSignal()
                    } catch {
                        return
                    }
                    tasksGot.add()
                    taken.signal()
                }
            }
            // Every task listed before the first signal.
            let deadline = patience()
            while semaphore.asyncWaiterCount.load(ordering: .relaxed) < waiters
                && SQTime.now() < deadline
            {
                await Task.yield()
            }
            #expect(semaphore.asyncWaiterCount.load(ordering: .relaxed) == waiters)
            // One signal at a time, each taken before the next: the thread has all the time
            // it needs to be asleep in wait() again when the next one comes.
            for _ in 0..<waiters {
                semaphore.signal()
                #expect(taken.wait(timeout: patience()) == .success)
            }
            #expect(tasksGot.value == waiters)
            #expect(threadGot.value == 0)
            group.cancelAll()  // tasks the thread was served before (the old code) stop waiting
        }
        stop.store(true, ordering: .releasing)
        semaphore.signal()
        #expect(threadDone.wait(timeout: patience()) == .success)
    }
}
