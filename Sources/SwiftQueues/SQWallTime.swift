import CQueueCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A point in time on the wall clock (`CLOCK_REALTIME`), for deadlines that must follow changes
/// of the system time: SwiftQueues' `DispatchWallTime`.
///
/// Make one with ``now()`` plus an offset, or from a `timespec`; arithmetic saturates. Times
/// compare in clock order, ``distantFuture`` last.
///
/// A value type; thread-safe. Dispatch: `DispatchWallTime`.
public struct SQWallTime: SQClockTime {
    /// The C core's `cq_time_t` for this time (a wall-clock value, or all bits set for
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

    /// The wall-clock time `timespec` (seconds and nanoseconds since the Unix epoch).
    /// Dispatch: `DispatchWallTime(timespec:)`.
    public init(timespec: timespec) {
        var copy = timespec
        rawValue = cq_walltime(&copy, 0)
    }

    /// The current wall-clock time. Thread-safe; never blocks. Dispatch: `DispatchWallTime.now()`.
    @inlinable
    public static func now() -> SQWallTime {
        SQWallTime(rawValue: cq_walltime(nil, 0))
    }

    /// A time that never comes. Dispatch: `DispatchWallTime.distantFuture`.
    @inlinable
    public static var distantFuture: SQWallTime {
        SQWallTime(rawValue: UInt64.max)
    }
}
