import CQueueCore

/// A point in time on the monotonic clock (`CLOCK_MONOTONIC`), for deadlines: SwiftQueues'
/// `DispatchTime`.
///
/// It does not move when the wall clock is set and does not advance while the machine is
/// suspended. Make one with ``now()`` plus an offset (`SQTime.now() + 0.5`,
/// `SQTime.now() + .milliseconds(20)`); arithmetic saturates at ``distantFuture`` and at the
/// earliest representable time. Times compare in clock order, ``distantFuture`` last.
///
/// A value type; thread-safe. Dispatch: `DispatchTime`.
public struct SQTime: SQClockTime {
    /// The C core's `cq_time_t` for this time (monotonic nanoseconds, or all bits set for
    /// ``distantFuture``), for passing to `cq_*` calls.
    public let rawValue: UInt64

    @inlinable
    internal init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    @inlinable
    public init(_cTime cTime: UInt64) {
        rawValue = cTime
    }

    /// The time `uptimeNanoseconds` nanoseconds after the monotonic clock's origin (boot).
    /// Values beyond `Int64.max` are ``distantFuture``. 0 means "now", as it does
    /// for `DispatchTime`: `SQTime(uptimeNanoseconds: 0) + .milliseconds(200)` is 200 ms from
    /// the moment it is used, and its ``uptimeNanoseconds`` is 0.
    ///
    /// Dispatch: `DispatchTime(uptimeNanoseconds:)`.
    @inlinable
    public init(uptimeNanoseconds: UInt64) {
        if uptimeNanoseconds > UInt64(Int64.max) {
            rawValue = UInt64.max
        } else {
            rawValue = uptimeNanoseconds
        }
    }

    /// The current time. Thread-safe; never blocks. Dispatch: `DispatchTime.now()`.
    @inlinable
    public static func now() -> SQTime {
        SQTime(rawValue: cq_time(0, 0))
    }

    /// A time that never comes: a wait with it as its timeout waits forever.
    /// Dispatch: `DispatchTime.distantFuture`.
    @inlinable
    public static var distantFuture: SQTime {
        SQTime(rawValue: UInt64.max)
    }

    /// Nanoseconds since the monotonic clock's origin (`UInt64.max` for ``distantFuture``).
    /// Dispatch: `DispatchTime.uptimeNanoseconds`.
    @inlinable
    public var uptimeNanoseconds: UInt64 {
        rawValue
    }
}
