import CQueueCore

extension SQQueue {
    /// Submits `work` to this queue at `deadline` (at once if it has passed) and returns at
    /// once.
    ///
    /// The work never starts before the deadline; it may start up to a tenth of the delay
    /// (at most 10 µs) after it, so that timers due close together share a wake-up, plus the
    /// time the queue needs to reach it. Work due at the same time is submitted in the order
    /// of the calls. With ``SQWorkItemFlags/barrier`` it runs as a barrier (through a work
    /// item, which the thread that fires the timer queues as a barrier). `qos` and
    /// the other flags are accepted and ignored (see ``SQQoS``).
    ///
    /// One allocation for the closure plus the C core's timer entry. Thread-safe; never
    /// blocks. Dispatch: `DispatchQueue.asyncAfter(deadline:qos:flags:execute:)`.
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public func asyncAfter(
        deadline: SQTime,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @Sendable () -> Void
    ) {
        after(deadline.rawValue, qos: qos, flags: flags, execute: work)
    }

    /// As ``asyncAfter(deadline:qos:flags:execute:)``, with a wall-clock deadline: the work is
    /// submitted when the wall clock (`CLOCK_REALTIME`) reaches `wallDeadline`, following
    /// changes of the system time.
    ///
    /// Thread-safe; never blocks.
    /// Dispatch: `DispatchQueue.asyncAfter(wallDeadline:qos:flags:execute:)`.
    @_disfavoredOverload  // on the main queue, SQMainQueue's @MainActor forms win
    public func asyncAfter(
        wallDeadline: SQWallTime,
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        execute work: @escaping @Sendable () -> Void
    ) {
        after(wallDeadline.rawValue, qos: qos, flags: flags, execute: work)
    }

    /// Submits `execute` to this queue at `deadline`, as ``async(execute:)`` would (a barrier
    /// item runs as a barrier). Timing as in ``asyncAfter(deadline:qos:flags:execute:)``. An
    /// item cancelled before it is due does not run (and has finished at the cancel).
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.asyncAfter(deadline:execute:)`.
    public func asyncAfter(deadline: SQTime, execute: SQWorkItem) {
        after(deadline.rawValue, execute: execute)
    }

    /// As ``asyncAfter(deadline:execute:)``, with a wall-clock deadline.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchQueue.asyncAfter(wallDeadline:execute:)`.
    public func asyncAfter(wallDeadline: SQWallTime, execute: SQWorkItem) {
        after(wallDeadline.rawValue, execute: execute)
    }

    /// The closure forms, for a `cq_time_t` on either clock.
    private func after(
        _ when: UInt64,
        qos: SQQoS,
        flags: SQWorkItemFlags,
        execute work: @escaping @Sendable () -> Void
    ) {
        if when == CQ_TIME_FOREVER {
            // Never due: the C core drops it, and so must we (the closure, and what it
            // captures, is released here; a retained box would stay for ever).
            return
        }
        if flags.contains(.barrier) {
            after(when, execute: SQWorkItem(qos: qos, flags: flags, block: work))
        } else {
            cq_after_f(when, handle, SQWorkBox.retainedContext(work), sqRunWorkBox)
        }
    }

    /// The work-item forms, for a `cq_time_t` on either clock (a barrier item is submitted as a
    /// barrier when it comes due).
    private func after(_ when: UInt64, execute item: SQWorkItem) {
        cq_after_work_item(when, handle, item.handle)
    }
}
