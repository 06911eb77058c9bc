extension SQSourceTimer {
    /// `schedule(deadline:repeating:leeway:)` with Dispatch's
    /// defaults: once (``SQTimeInterval/never``), no leeway.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(deadline:repeating:leeway:)`.
    public func schedule(
        deadline: SQTime,
        repeating interval: SQTimeInterval = .never,
        leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        // With every argument given this resolves to the protocol requirement, not to itself.
        schedule(deadline: deadline, repeating: interval, leeway: leeway)
    }

    /// `schedule(deadline:repeating:leeway:)` with no leeway by default.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(deadline:repeating:leeway:)`.
    public func schedule(
        deadline: SQTime,
        repeating interval: Double,
        leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(deadline: deadline, repeating: interval, leeway: leeway)
    }

    /// `schedule(wallDeadline:repeating:leeway:)` with
    /// Dispatch's defaults: once, no leeway.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(wallDeadline:repeating:leeway:)`.
    public func schedule(
        wallDeadline: SQWallTime,
        repeating interval: SQTimeInterval = .never,
        leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(wallDeadline: wallDeadline, repeating: interval, leeway: leeway)
    }

    /// `schedule(wallDeadline:repeating:leeway:)` with no leeway
    /// by default.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(wallDeadline:repeating:leeway:)`.
    public func schedule(
        wallDeadline: SQWallTime,
        repeating interval: Double,
        leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(wallDeadline: wallDeadline, repeating: interval, leeway: leeway)
    }
}
