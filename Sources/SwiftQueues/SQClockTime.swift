import CQueueCore

/// What ``SQTime`` (monotonic clock) and ``SQWallTime`` (wall clock) have in common: each is a
/// C `cq_time_t` on its clock, ordered by that value, and moved by an interval with `cq_time`,
/// which keeps the clock and saturates. The comparison and the `+`/`-` operators are written
/// once, here, for both.
///
/// Dispatch has no such protocol (it repeats the operators per type); conforming other types
/// is not supported.
public protocol SQClockTime: Sendable, Hashable, Comparable {
    /// The C core's `cq_time_t` for this time.
    var rawValue: UInt64 { get }

    /// The time whose `cq_time_t` is `cTime` (for the operators below; not for direct use).
    init(_cTime cTime: UInt64)
}

extension SQClockTime {
    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// `time` moved later by `interval`; saturates (``SQTimeInterval/never`` gives
    /// `distantFuture`). Dispatch: `DispatchTime + DispatchTimeInterval` and
    /// `DispatchWallTime + DispatchTimeInterval`.
    @inlinable
    public static func + (time: Self, interval: SQTimeInterval) -> Self {
        Self(_cTime: cq_time(time.rawValue, interval.clampedNanoseconds))
    }

    /// `time` moved earlier by `interval`; saturates at the earliest time.
    /// Dispatch: `DispatchTime - DispatchTimeInterval` (and the wall-clock form).
    @inlinable
    public static func - (time: Self, interval: SQTimeInterval) -> Self {
        Self(_cTime: cq_time(time.rawValue, SQTimeInterval.negated(interval.clampedNanoseconds)))
    }

    /// `time` moved later by `seconds`; saturates. Dispatch: `DispatchTime + Double`.
    @inlinable
    public static func + (time: Self, seconds: Double) -> Self {
        Self(_cTime: cq_time(time.rawValue, SQTimeInterval.clampedNanoseconds(seconds: seconds)))
    }

    /// `time` moved earlier by `seconds`; saturates. As in Dispatch, NaN seconds give the
    /// distant future here too, as they do in `+` (not the earliest time).
    /// Dispatch: `DispatchTime - Double`.
    @inlinable
    public static func - (time: Self, seconds: Double) -> Self {
        Self(_cTime: cq_time(time.rawValue, SQTimeInterval.clampedNanoseconds(seconds: -seconds)))
    }

    // The `Duration` forms are disfavoured so that `time + .seconds(1)` keeps meaning the
    // ``SQTimeInterval`` case (as with Dispatch) instead of being ambiguous with
    // `Duration.seconds(_:)`; a `Duration` value, or `.milliseconds(1.5)`, selects them.

    /// `time` moved later by `duration`; saturates. Sub-nanosecond parts are truncated.
    /// Dispatch has no equivalent.
    @inlinable
    @_disfavoredOverload
    public static func + (time: Self, duration: Duration) -> Self {
        Self(_cTime: cq_time(time.rawValue, SQTimeInterval.clampedNanoseconds(duration)))
    }

    /// `time` moved earlier by `duration`; saturates. Dispatch has no equivalent.
    @inlinable
    @_disfavoredOverload
    public static func - (time: Self, duration: Duration) -> Self {
        Self(
            _cTime: cq_time(
                time.rawValue, SQTimeInterval.negated(SQTimeInterval.clampedNanoseconds(duration))))
    }
}
