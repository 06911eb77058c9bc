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

    /// SQQueue.main.sync from DispatchQueue.main work after dispatchMain() waited for ever; it
    /// stops with a message.
    @Test func testSyncOntoTheMainQueueFromDispatchMainWorkStops() {
        let probe = runDispatchMainProbe("sync-inside")
        #expect(probe.status != 0 && probe.status != -Int32(SIGALRM), "\(probe.output)")
        #expect(
            probe.output.contains("SQQueue.main.sync: called from work of libdispatch's main queue"),
            "\(probe.output)")
        #expect(!probe.output.contains("returned"), "\(probe.output)")
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

/// Runs SQProbeDispatchMain (built next to the test bundle) with `mode` (SourceSupport.swift's
/// runProbe: the child gets an empty signal mask and default handlers, so that its watchdog
/// works although the spawning thread may be a C core thread, which blocks every signal).
private func runDispatchMainProbe(_ mode: String) -> (status: Int32, output: String) {
    runProbe("SQProbeDispatchMain", [mode])
}
