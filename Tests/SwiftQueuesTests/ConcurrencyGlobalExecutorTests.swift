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
            // Task.sleep goes through the runtime's delayed-enqueue hooks (both clocks).
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
}
