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

/// Runs one of the probe programs built next to the test bundle (Tests/Probes) and returns its
/// exit status (-signal if a signal ended it) and output.
private func runProbe(_ name: String, _ arguments: [String] = []) -> (status: Int32, output: String) {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let me = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let directory = me.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        .joined(separator: "/")
    let path = directory + "/" + name
    guard access(path, X_OK) == 0 else {
        return (-1000, "probe \(path) not built (swift build builds it with the tests)")
    }
    let pipe = makePipe()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 1)
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    // The spawning thread may block signals (the C core's threads block them all): give the
    // child an empty mask and default handlers, so that its watchdog (SIGALRM) works.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, &argv, environ)
    close(pipe.write)
    guard spawned == 0 else {
        close(pipe.read)
        return (-1001, "posix_spawn \(path) failed: \(spawned)")
    }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipe.read, &chunk, chunk.count)
        if count > 0 {
            output += chunk.prefix(count)
        } else if count == 0 || errno != EINTR {
            break
        }
    }
    close(pipe.read)
    let status = reap(pid)
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : -(status & 0x7f), String(decoding: output, as: UTF8.self))
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

    @Test func testAsyncMainRunsTheMainQueue() {
        let probe = runProbe("SQProbeAsyncMain")
        #expect(probe.status == 0, "\(probe.output)")
    }
}
