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
}
