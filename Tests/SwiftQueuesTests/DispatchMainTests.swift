import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A program ported from Dispatch by renaming types to SQ* that still ends in libdispatch's
/// `dispatchMain()` (it compiles wherever Dispatch or Foundation is imported): the main thread
/// ends, libdispatch runs its main queue (DispatchQueue.main, MainActor) on a thread of its own,
/// and SQQueue.main must run there too, in turn with it. Such a program never returns from
/// dispatchMain(), so each test runs SQProbeDispatchMain (Tests/Probes/DispatchMain) as a child
/// process. The old code drained SQQueue.main on a pool thread: the first `@MainActor` closure
/// trapped in MainActor.assumeIsolated (SIGILL), and SQOperationQueue.main operations ran at the
/// same time as DispatchQueue.main work (3,945 of 4,000 critical sections overlapped).
@Suite struct DispatchMainTests {
    @Test func testSQQueueMainRunsAfterDispatchMain() {
        let probe = runDispatchMainProbe("result")
        #expect(probe.status == 0, "\(probe.output)")
        #expect(probe.output.contains("result on main queue: 42"), "\(probe.output)")
    }

    @Test func testMainQueuesTakeTurnsAfterDispatchMain() {
        let probe = runDispatchMainProbe("turns")
        #expect(probe.status == 0, "\(probe.output)")
        #expect(
            probe.output.contains(
                "sections 4000, overlaps 0, outside libdispatch's main queue 0, out of order 0, "
                    + "run twice 0, threads 1"),
            "\(probe.output)")
    }

    @Test func testEveryWayOntoTheMainQueuesAfterDispatchMain() {
        let probe = runDispatchMainProbe("mixed")
        #expect(probe.status == 0, "\(probe.output)")
        #expect(
            probe.output.contains(
                "sections 2700, overlaps 0, outside libdispatch's main queue 0, out of order 0, "
                    + "run twice 0"),
            "\(probe.output)")
        #expect(!probe.output.contains("after exit()"), "\(probe.output)")
    }
}

/// Runs SQProbeDispatchMain (built next to the test bundle) with `mode`; returns its exit status
/// (-signal if a signal ended it) and its output. As MainActorTests' runProbe: the child gets an
/// empty signal mask and default handlers, so that its watchdog (SIGALRM) works although the
/// spawning thread may be a C core thread, which blocks every signal.
private func runDispatchMainProbe(_ mode: String) -> (status: Int32, output: String) {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let me = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let directory = me.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        .joined(separator: "/")
    let path = directory + "/SQProbeDispatchMain"
    guard access(path, X_OK) == 0 else {
        return (-1000, "probe \(path) not built (swift build builds it with the tests)")
    }
    let pipe = makePipe()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 1)
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), strdup(mode), nil]
    defer { argv.forEach { free($0) } }
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
