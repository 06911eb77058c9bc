import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether the caller runs on the process's main thread.
private func onMainThread() -> Bool {
    getpid() == Int32(truncatingIfNeeded: currentThreadID())
}

private func currentThreadID() -> Int {
    // /proc/thread-self is a link to /proc/<pid>/task/<tid>.
    var buffer = [CChar](repeating: 0, count: 256)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard count > 0 else {
        return -1
    }
    let path = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return Int(path.split(separator: "/").last ?? "") ?? -1
}

/// The main thread, the main queue and Swift's MainActor. This test process itself has an
/// async main (the test runner's), so the in-process tests see the async-main side: once main
/// first suspends, SwiftQueues' main loop runs both main queues on the main thread. The probes
/// are whole programs for each side.
/// Main-actor state, for closures given to the main queue.
@MainActor private var mainActorHits = 0

@MainActor private func hitOnMainActor() -> Int {
    mainActorHits += 1
    return mainActorHits
}

@Suite struct MainActorTests {
    @Test @MainActor func testMainActorRunsOnTheMainThread() {
        #expect(onMainThread())
    }

    @Test(.timeLimit(.minutes(1))) func testMainQueueRunsUnderAsyncMain() {
        let ran = SQSemaphore(value: 0)
        let onMain = Counter()
        SQQueue.main.async {
            if onMainThread() {
                onMain.add()
            }
            ran.signal()
        }
        #expect(ran.wait(timeout: patience()) == .success)
        #expect(onMain.value == 1)
    }

    @Test(.timeLimit(.minutes(1))) func testMainActorAndMainQueueTakeTurns() async throws {
        // Work of the two executors never overlaps: both run on the main thread.
        let inside = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<200 {
                    await MainActor.run { inside.during { busyWork() } }
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    try await SQQueue.main.run { inside.during { busyWork() } }
                }
            }
            try await group.waitForAll()
        }
        #expect(inside.peak.value == 1)
    }

    /// Closures given to the main queue's async, asyncAfter and sync may call main-actor code,
    /// as those given to `DispatchQueue.main` may: this file compiles under Swift 6's strict
    /// concurrency only if they are `@MainActor` (they were plain `@Sendable` closures: "call to
    /// main actor-isolated global function in a synchronous nonisolated context"). They run on
    /// the main thread.
    @Test(.timeLimit(.minutes(1))) func testMainQueueTakesMainActorClosures() {
        let done = SQSemaphore(value: 0)
        let onMain = Counter()
        SQQueue.main.async {
            _ = hitOnMainActor()
            if onMainThread() { onMain.add() }
            done.signal()
        }
        SQQueue.main.asyncAfter(deadline: .now()) {
            _ = hitOnMainActor()
            done.signal()
        }
        SQQueue.main.asyncAfter(wallDeadline: .now()) { @MainActor in
            _ = hitOnMainActor()
            done.signal()
        }
        for _ in 0..<3 {
            #expect(done.wait(timeout: patience()) == .success)
        }
        let fourth = SQQueue.main.sync { hitOnMainActor() }
        #expect(fourth == 4)
        SQQueue.main.sync { _ = hitOnMainActor() }
        let sixth = SQQueue.main.sync(flags: .barrier) { hitOnMainActor() }
        #expect(sixth == 6)
        #expect(onMain.value == 1)
        // Typed as a plain queue, the main queue takes plain closures.
        let plain: SQQueue = SQQueue.main
        plain.async { done.signal() }
        #expect(done.wait(timeout: patience()) == .success)
    }

    @Test(.timeLimit(.minutes(1))) func testMainActorIsolationHoldsOnTheMainQueue() {
        let done = SQSemaphore(value: 0)
        let passed = Counter()
        SQQueue.main.async {
            MainActor.assumeIsolated {
                _ = passed.add()
            }
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(passed.value == 1)
    }

    @Test func testRunMainRunsMainActorWork() {
        let probe = runProbe("SQProbeSyncMain", ["mainactor"])
        #expect(probe.status == 0, "\(probe.output)")
    }

    @Test func testActorOnTheMainQueueUnderRunMain() {
        let probe = runProbe("SQProbeSyncMain", ["actor"])
        #expect(probe.status == 0, "\(probe.output)")
    }

    /// Notifications onto `.main` take `@MainActor` closures, as with Dispatch, where code on
    /// the main actor writes them with `self.` state (the probe compiles only with them).
    @Test func testMainActorNotificationsOntoTheMainQueue() {
        let probe = runProbe("SQProbeSyncMain", ["notify"])
        #expect(probe.status == 0, "\(probe.output)")
    }

    /// The main thread waiting for SQOperationQueue.main's operations, which only it runs,
    /// stops with a message (it hung with no word, as Foundation's does).
    @Test(arguments: [
        ("waitmain", "SQOperationQueue.waitUntilAllOperationsAreFinished(): called on the main thread"),
        ("waitop", "waits to start in SQOperationQueue.main"),
    ])
    func testMainThreadWaitForTheMainOperationQueue(mode: String, message: String) {
        let probe = runProbe("SQProbeSyncMain", [mode])
        #expect(probe.status != 0 && probe.status != -SIGALRM, "\(probe.output)")
        #expect(probe.output.contains(message), "\(probe.output)")
        #expect(!probe.output.contains("ran"), "\(probe.output)")
    }

    @Test func testAsyncMainRunsTheMainQueue() {
        let probe = runProbe("SQProbeAsyncMain")
        #expect(probe.status == 0, "\(probe.output)")
    }
}
