import CQueueCore

/// The type of ``SQQueue/main``: the main queue, whose work runs on the main thread, where
/// Swift's `MainActor` runs too.
///
/// The compiler treats a closure given to `DispatchQueue.main.async` (and `asyncAfter`, `sync`)
/// as `@MainActor`: it may call main-actor code. The same calls on `SQQueue.main` take
/// `@MainActor` closures for the same reason, so that such code ports by a rename and compiles
/// under Swift 6's strict concurrency:
///
/// ```swift
/// @MainActor func show(_ text: String) { ... }
///
/// SQQueue.global().async {
///     let text = render()
///     SQQueue.main.async { show(text) }  // a @MainActor closure
/// }
/// ```
///
/// Each runs its closure on the main thread, inside the main queue's work, where the main
/// actor's isolation holds (checked once per closure, as `MainActor.assumeIsolated` does). In a
/// program whose main thread ended in libdispatch's `dispatchMain()`, the main queue's work runs
/// inside libdispatch's main queue instead, where the main actor runs then, in turn with
/// `DispatchQueue.main` work (see <doc:SwiftConcurrency>).
/// Reached through a variable typed ``SQQueue`` or ``SQSerialQueue``, the main queue takes
/// plain `@Sendable` closures, as any queue does.
///
/// Thread-safety: as ``SQQueue``. Dispatch: `DispatchQueue.main` (a `DispatchQueue`).
public final class SQMainQueue: SQSerialQueue, @unchecked Sendable {
    /// The wrapper of the C core's main queue (``SQQueue/main``).
    override internal init(mainQueue: Void) {
        // Before the main queue is reachable from Swift: once the main thread has ended in
        // libdispatch's dispatchMain(), its drains go to libdispatch's main queue
        // (SQMainQueue+Dispatch.swift), not to the pool, where @MainActor closures trapped.
        SQMainQueue.handOrphanedDrainsToDispatch()
        super.init(mainQueue: ())
    }

    /// ``SQQueue/async(group:qos:flags:execute:)`` for a `@MainActor` closure.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.main.async(group:qos:flags:execute:)`.
    public func async(
        group: SQGroup? = nil,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @MainActor @Sendable () -> Void
    ) {
        sqSubmitInline(
            handle, group: group?.handle, SQMainQueue.plain(work),
            barrier: flags.contains(.barrier))
    }

    /// ``SQQueue/asyncAfter(deadline:qos:flags:execute:)`` for a `@MainActor` closure.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.main.asyncAfter(deadline:...)`.
    public func asyncAfter(
        deadline: SQTime,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @MainActor @Sendable () -> Void
    ) {
        (self as SQQueue).asyncAfter(
            deadline: deadline, qos: qos, flags: flags, execute: SQMainQueue.plain(work))
    }

    /// ``SQQueue/asyncAfter(wallDeadline:qos:flags:execute:)`` for a `@MainActor` closure.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.main.asyncAfter(wallDeadline:...)`.
    public func asyncAfter(
        wallDeadline: SQWallTime,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @MainActor @Sendable () -> Void
    ) {
        (self as SQQueue).asyncAfter(
            wallDeadline: wallDeadline, qos: qos, flags: flags, execute: SQMainQueue.plain(work))
    }

    /// ``SQQueue/sync(flags:execute:)`` for a `@MainActor` closure: from another thread the main
    /// thread runs it, and the caller waits.
    ///
    /// Blocks until the closure has run (the main thread must be draining the main queue).
    /// Dispatch: `DispatchQueue.main.sync(flags:execute:)`.
    public func sync<T>(
        flags: SQWorkItemFlags, execute work: @MainActor () throws -> T
    ) rethrows -> T {
        SQMainQueue.refuseSyncInsideDispatchMain()
        return try (self as SQQueue).sync(flags: flags) { try SQMainQueue.onMainActor(work) }
    }

    /// ``SQQueue/sync(execute:)-(()->T)`` for a `@MainActor` closure.
    ///
    /// Blocks until the closure has run. Dispatch: `DispatchQueue.main.sync(execute:)`.
    public func sync<T>(execute work: @MainActor () throws -> T) rethrows -> T {
        SQMainQueue.refuseSyncInsideDispatchMain()
        return try (self as SQQueue).sync { try SQMainQueue.onMainActor(work) }
    }

    /// ``SQQueue/sync(execute:)-(()->Void)`` for a `@MainActor` closure.
    ///
    /// Blocks until the closure has run. Dispatch: `DispatchQueue.main.sync(execute:)`.
    public func sync(execute block: @MainActor () -> Void) {
        SQMainQueue.refuseSyncInsideDispatchMain()
        (self as SQQueue).sync { SQMainQueue.onMainActor(block) }
    }

    /// `work` as a plain closure for the main queue, which runs it where the main actor's
    /// isolation holds (checked once per call, as `MainActor.assumeIsolated` does).
    internal static func plain(
        _ work: @escaping @MainActor @Sendable () -> Void
    ) -> @Sendable () -> Void {
        { MainActor.assumeIsolated(work) }
    }

    /// Runs `work` on the calling thread, which must be where the main actor runs (the main
    /// thread, inside main-queue work): `MainActor.assumeIsolated` for any result type, not only
    /// `Sendable` ones (the result stays on the thread that waits for it).
    private static func onMainActor<T>(_ work: @MainActor () throws -> T) rethrows -> T {
        MainActor.preconditionIsolated(
            "SQQueue.main ran a closure off the main actor's thread")
        return try withoutActuallyEscaping(work) { escapable in
            // safety: isolation was just checked; a @MainActor synchronous function has the
            // same representation as a nonisolated one.
            try unsafeBitCast(escapable, to: (() throws -> T).self)()
        }
    }
}
