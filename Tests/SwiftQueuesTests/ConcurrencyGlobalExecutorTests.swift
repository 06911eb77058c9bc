import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `SQQueue.tryInstallAsGlobalConcurrentExecutor()`: a process-wide change, so each test runs
/// in a child process (an exit test).
@Suite struct ConcurrencyGlobalExecutorTests {
    @Test func testTasksWithoutPreferenceRunOnThePool() async {
        await #expect(processExitsWith: .success) {
            let before = await Task.detached { onOurPool() }.value
            guard !before, !SQQueue.isGlobalConcurrentExecutor,
                SQQueue.tryInstallAsGlobalConcurrentExecutor(),
                SQQueue.tryInstallAsGlobalConcurrentExecutor(),  // again: still true
                SQQueue.isGlobalConcurrentExecutor
            else {
                exit(2)
            }
            let detached = await Task.detached { onOurPool() }.value
            let children = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask { onOurPool() }
                }
                var all = true
                for await child in group {
                    all = all && child
                }
                return all
            }
            exit(detached && children ? 0 : 1)
        }
    }

    @Test func testSleepAndPrioritiesOnThePool() async {
        await #expect(processExitsWith: .success) {
            guard SQQueue.tryInstallAsGlobalConcurrentExecutor() else {
                exit(2)
            }
            // Task.sleep's wake-up is scheduled on the pool (both clocks).
            let continuous = await Task.detached { () -> Bool in
                try? await Task.sleep(for: .milliseconds(2))
                return onOurPool()
            }.value
            let suspending = await Task.detached { () -> Bool in
                try? await Task.sleep(
                    until: .now + .milliseconds(2), clock: SuspendingClock())
                return onOurPool()
            }.value
            // A background task runs on the background band's threads.
            let background = await Task.detached(priority: .background) {
                currentThreadName()
            }.value
            exit(continuous && suspending && background.hasPrefix("cq-bg") ? 0 : 1)
        }
    }

    /// Since Swift 6.2, `Task.yield()` and `Task.sleep` enqueue onto the standard library's
    /// default executor object, not through the runtime's hooks: with only the hooks taken
    /// over, each yield and each sleep's wake-up was a job on libdispatch's threads (which
    /// then handed the task back to the pool). The pool's own counters see them now: a timer
    /// fire per sleep (none before), and a job per yield besides the task's resumption.
    @Test func testYieldAndSleepJobsRunOnThePool() async {
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardErrorContent]
        ) {
            guard SQQueue.tryInstallAsGlobalConcurrentExecutor() else {
                exit(2)
            }
            let sleeps = 20
            let yields = 2_000
            let firesBefore = SQRuntime.counters.timerFires
            await Task.detached {
                for _ in 0..<sleeps {
                    // Long enough for its deadline to be ahead when the timer is armed, on a
                    // busy machine too: a deadline already passed is queued at once, without
                    // a timer fire (200 µs sleeps failed the count below beside CPU hogs).
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }.value
            let fires = SQRuntime.counters.timerFires - firesBefore
            let tasksBefore = SQRuntime.counters.tasksRun
            await Task.detached {
                for _ in 0..<yields {
                    await Task.yield()
                }
            }.value
            let tasks = SQRuntime.counters.tasksRun - tasksBefore
            // Two jobs a yield (the yield's, then the task's), one with libdispatch doing the
            // yield's: 4,000-4,003 against 2,000-2,00x here. Timer fires: one a sleep, none
            // with libdispatch's; half of them at least, whatever the machine's load.
            let passed = fires >= UInt64(sleeps / 2) && tasks >= UInt64(yields * 3 / 2)
            if !passed {
                let report =
                    "timer fires \(fires) for \(sleeps) sleeps; "
                    + "tasks \(tasks) for \(yields) yields\n"
                _ = report.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            }
            exit(passed ? 0 : 1)
        }
        // The counts, if the child failed.
        let report = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!report.contains("timer fires"), "\(report)")
    }
}
