import CQueueCore
// The toolchain's Dispatch module, as Synchronization and Glibc are (no package dependency):
// libdispatch itself is in every process that links SwiftQueues already (Swift's concurrency
// runtime, which MainActor needs, links it on Linux). `internal`: nothing of Dispatch becomes
// part of SwiftQueues' interface, so a file that imports SwiftQueues sees none of its names.
internal import Dispatch

// Where SQQueue.main runs after libdispatch's `dispatchMain()`.
//
// Code ported from Dispatch by renaming types often keeps its final `dispatchMain()`: it still
// compiles wherever Foundation or Dispatch is imported. libdispatch's dispatchMain() ends the
// main thread (pthread_exit), and from then on libdispatch drains its own main queue, where
// Swift's MainActor and DispatchQueue.main put their work on Linux, on a thread of its own. The
// C core sees the main thread go and, left to itself, drains our main queue on its pool
// (queue_main.c), as a C program needs. In Swift that went wrong twice: SQQueue.main's
// `@MainActor` closures trapped on the pool thread in `MainActor.assumeIsolated` (SIGILL in
// _dispatch_assert_queue_fail, the main actor being libdispatch's main queue), and
// SQOperationQueue.main work ran at the same time as DispatchQueue.main work (3,950 of 4,000
// critical sections overlapped), where Foundation has one serial main queue.
//
// So SwiftQueues hands each drain of the orphaned main queue to libdispatch's main queue: our
// main queue's work then runs inside libdispatch's, in turn with DispatchQueue.main and
// `@MainActor` work, on the thread libdispatch runs its main queue on, with the main actor's
// isolation holding. The C core sends one drain each time the main queue is enqueued and keeps
// drains one at a time (each takes the queue), so nothing is lost, run twice or reordered.
// While the main thread runs SQQueue.runMain() (or an `async` main, which runs that loop) the
// main queue is never orphaned and the hand-off is never called.
/// Marks libdispatch's main queue (its specific value), so that a sync onto our main queue
/// from work running there can be told apart (see refuseSyncInsideDispatchMain).
private let insideDispatchMainKey = DispatchSpecificKey<Bool>()

extension SQMainQueue {
    /// Registers the hand-off with the C core (`cq_swift_main_set_orphan_handoff`). Called by
    /// the main queue's wrapper before the main queue is reachable from Swift, so that no
    /// enqueueing from Swift can come before it.
    internal static func handOrphanedDrainsToDispatch() {
        DispatchQueue.main.setSpecific(key: insideDispatchMainKey, value: true)
        cq_swift_main_set_orphan_handoff {
            // Called by the C core on any thread, possibly inside a task or a drain: never
            // blocks. Dispatch's main queue runs the drain later, exactly once.
            DispatchQueue.main.async {
                cq_swift_main_orphan_drain()
            }
        }
    }

    /// A sync onto the main queue from work of libdispatch's main queue off the main thread:
    /// after `dispatchMain()` our main queue runs inside libdispatch's (above), so the sync
    /// waited for ever for the queue its caller held. It stops with a message instead, as a
    /// sync onto the queue the caller runs on does (docs/misuse.md). (On the main thread, while
    /// it runs our main loop, the C core's own check covers it.)
    internal static func refuseSyncInsideDispatchMain() {
        if DispatchQueue.getSpecific(key: insideDispatchMainKey) == true, !cq_thread_is_main() {
            fatalError(
                "SQQueue.main.sync: called from work of libdispatch's main queue (DispatchQueue"
                    + ".main or MainActor) after dispatchMain(), where SQQueue.main runs too: it "
                    + "would wait for ever; call the closure directly (it is on the main actor)")
        }
    }
}
