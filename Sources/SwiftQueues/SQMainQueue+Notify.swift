// Notifications onto the main queue that take `@MainActor` closures, as SQMainQueue's own
// `async` and `asyncAfter` do.
//
// Code on the main actor writes `group.notify(queue: .main) { self.items.append(x) }`: with
// Dispatch on Linux the closure parameter is not `@Sendable`, so the closure keeps the main
// actor's isolation and the line compiles. Ours took only `@Sendable` closures, which are not
// isolated, and a port of such code failed with "main actor-isolated property ... can not be
// mutated from a Sendable closure" (found by porting Dispatch programs). Given the main queue,
// whose work runs where the main actor's isolation holds, these overloads take `@MainActor`
// closures; the compiler picks them for `.main` (the more specific queue type).

extension SQGroup {
    /// ``notify(qos:flags:queue:execute:)`` onto the main queue, for a `@MainActor` closure.
    ///
    /// One allocation for the closure; thread-safe; never blocks.
    /// Dispatch: `DispatchGroup.notify(qos:flags:queue: .main, execute:)`.
    public func notify(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        queue: SQMainQueue,
        execute work: @escaping @MainActor @Sendable () -> Void
    ) {
        notify(qos: qos, flags: flags, queue: queue as SQQueue, execute: SQMainQueue.plain(work))
    }
}

extension SQWorkItem {
    /// ``notify(qos:flags:queue:execute:)`` onto the main queue, for a `@MainActor` closure.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchWorkItem.notify(qos:flags:queue: .main,
    /// execute:)`.
    public func notify(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        queue: SQMainQueue,
        execute work: @escaping @MainActor @Sendable () -> Void
    ) {
        notify(qos: qos, flags: flags, queue: queue as SQQueue, execute: SQMainQueue.plain(work))
    }
}
