import CQueueCore

extension SQWallTime {
    /// `time` moved later by `interval`; saturates. Dispatch: `DispatchWallTime +
    /// DispatchTimeInterval`.
    @inlinable
    public static func + (time: SQWallTime, interval: SQTimeInterval) -> SQWallTime {
        SQWallTime(rawValue: cq_time(time.rawValue, interval.clampedNanoseconds))
    }

    /// `time` moved earlier by `interval`; saturates. Dispatch: `DispatchWallTime -
    /// DispatchTimeInterval`.
    @inlinable
    public static func - (time: SQWallTime, interval: SQTimeInterval) -> SQWallTime {
        SQWallTime(
            rawValue: cq_time(
                time.rawValue, SQTimeInterval.negated(interval.clampedNanoseconds)))
    }

    /// `time` moved later by `seconds`; saturates. Dispatch: `DispatchWallTime + Double`.
    @inlinable
    public static func + (time: SQWallTime, seconds: Double) -> SQWallTime {
        SQWallTime(
            rawValue: cq_time(time.rawValue, SQTimeInterval.clampedNanoseconds(seconds: seconds)))
    }

    /// `time` moved earlier by `seconds`; saturates. Dispatch: `DispatchWallTime - Double`.
    @inlinable
    public static func - (time: SQWallTime, seconds: Double) -> SQWallTime {
        SQWallTime(
            rawValue: cq_time(
                time.rawValue,
                SQTimeInterval.negated(SQTimeInterval.clampedNanoseconds(seconds: seconds))))
    }

    // The `Duration` forms are disfavoured so that `time + .seconds(1)` keeps meaning the
    // ``SQTimeInterval`` case (as with Dispatch) instead of being ambiguous with
    // `Duration.seconds(_:)`; a `Duration` value, or `.milliseconds(1.5)`, selects them.

    /// `time` moved later by `duration`; saturates. Sub-nanosecond parts are truncated.
    /// Dispatch has no equivalent.
    @inlinable
    @_disfavoredOverload
    public static func + (time: SQWallTime, duration: Duration) -> SQWallTime {
        SQWallTime(rawValue: cq_time(time.rawValue, SQTimeInterval.clampedNanoseconds(duration)))
    }

    /// `time` moved earlier by `duration`; saturates. Dispatch has no equivalent.
    @inlinable
    @_disfavoredOverload
    public static func - (time: SQWallTime, duration: Duration) -> SQWallTime {
        SQWallTime(
            rawValue: cq_time(
                time.rawValue, SQTimeInterval.negated(SQTimeInterval.clampedNanoseconds(duration))))
    }
}
