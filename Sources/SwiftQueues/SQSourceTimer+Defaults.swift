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

    // Dispatch's deprecated spellings, kept so that old code ports by renaming (with the same
    // deprecation warnings).

    /// Dispatch: `DispatchSourceTimer.scheduleOneshot(deadline:leeway:)` (deprecated).
    @available(*, deprecated, renamed: "schedule(deadline:repeating:leeway:)")
    public func scheduleOneshot(deadline: SQTime, leeway: SQTimeInterval = .nanoseconds(0)) {
        schedule(deadline: deadline, repeating: .never, leeway: leeway)
    }

    /// Dispatch: `DispatchSourceTimer.scheduleOneshot(wallDeadline:leeway:)` (deprecated).
    @available(*, deprecated, renamed: "schedule(wallDeadline:repeating:leeway:)")
    public func scheduleOneshot(wallDeadline: SQWallTime, leeway: SQTimeInterval = .nanoseconds(0)) {
        schedule(wallDeadline: wallDeadline, repeating: .never, leeway: leeway)
    }

    /// Dispatch: `DispatchSourceTimer.scheduleRepeating(deadline:interval:leeway:)` (deprecated).
    @available(*, deprecated, renamed: "schedule(deadline:repeating:leeway:)")
    public func scheduleRepeating(
        deadline: SQTime, interval: SQTimeInterval, leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(deadline: deadline, repeating: interval, leeway: leeway)
    }

    /// Dispatch: `DispatchSourceTimer.scheduleRepeating(deadline:interval:leeway:)` (deprecated).
    @available(*, deprecated, renamed: "schedule(deadline:repeating:leeway:)")
    public func scheduleRepeating(
        deadline: SQTime, interval: Double, leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(deadline: deadline, repeating: interval, leeway: leeway)
    }

    /// Dispatch: `DispatchSourceTimer.scheduleRepeating(wallDeadline:interval:leeway:)`
    /// (deprecated).
    @available(*, deprecated, renamed: "schedule(wallDeadline:repeating:leeway:)")
    public func scheduleRepeating(
        wallDeadline: SQWallTime, interval: SQTimeInterval, leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(wallDeadline: wallDeadline, repeating: interval, leeway: leeway)
    }

    /// Dispatch: `DispatchSourceTimer.scheduleRepeating(wallDeadline:interval:leeway:)`
    /// (deprecated).
    @available(*, deprecated, renamed: "schedule(wallDeadline:repeating:leeway:)")
    public func scheduleRepeating(
        wallDeadline: SQWallTime, interval: Double, leeway: SQTimeInterval = .nanoseconds(0)
    ) {
        schedule(wallDeadline: wallDeadline, repeating: interval, leeway: leeway)
    }
}
