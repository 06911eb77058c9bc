/// A source that fires at a deadline, once or repeatedly
/// (``SQSource/makeTimerSource(flags:queue:)``): SwiftQueues' `DispatchSourceTimer`.
///
/// Give it a schedule with one of the `schedule` methods (before or after activation; again to
/// change it). ``SQSourceProtocol/data`` is the number of fires since the last handler call: a
/// timer whose handler or queue fell behind reports the missed fires instead of firing in a
/// storm. Fire *n* is due at `deadline + n × repeating` (no drift). A suspended timer does not
/// wake the process.
///
/// Leeway lets the reactor fire the timer up to `leeway` late so that timers due close together
/// share one wake-up; a timer with no other timer in its window fires at its deadline. It never
/// fires early.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceTimer` (the deprecated
/// `scheduleOneshot` / `scheduleRepeating` are not provided: use `schedule`).
public protocol SQSourceTimer: SQSourceProtocol {
    /// Sets the timer to fire first at `deadline` (monotonic clock), then every `repeating`
    /// (``SQTimeInterval/never``: once), up to `leeway` late.
    ///
    /// Replaces any previous schedule and discards fires not yet handled; may be called from the
    /// event handler. Does nothing once the source is cancelled. A zero interval fires once. A
    /// negative interval or leeway stops the process with a message.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(deadline:repeating:leeway:)`.
    func schedule(deadline: SQTime, repeating interval: SQTimeInterval, leeway: SQTimeInterval)

    /// As `schedule(deadline:repeating:leeway:)`, with the interval in seconds
    /// (`.infinity`: once). A negative or NaN interval stops the process with a message.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(deadline:repeating:leeway:)`.
    func schedule(deadline: SQTime, repeating interval: Double, leeway: SQTimeInterval)

    /// As `schedule(deadline:repeating:leeway:)`, with a deadline on the wall
    /// clock (`CLOCK_REALTIME`): the timer follows changes of the system time.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(wallDeadline:repeating:leeway:)`.
    func schedule(
        wallDeadline: SQWallTime, repeating interval: SQTimeInterval, leeway: SQTimeInterval)

    /// As `schedule(wallDeadline:repeating:leeway:)`, with the interval in
    /// seconds (`.infinity`: once).
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceTimer.schedule(wallDeadline:repeating:leeway:)`.
    func schedule(wallDeadline: SQWallTime, repeating interval: Double, leeway: SQTimeInterval)
}
