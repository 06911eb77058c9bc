import CQueueCore

/// The class of a timer source (``SQSource/makeTimerSource(flags:queue:)``).
/// Not public API: callers see it as `any SQSourceTimer`.
internal final class SQSourceTimerObject: SQSource, SQSourceTimer, @unchecked Sendable {
    func schedule(deadline: SQTime, repeating interval: SQTimeInterval, leeway: SQTimeInterval) {
        cq_source_set_timer(
            object, deadline.rawValue, Self.nanoseconds(repeating: interval),
            Self.nanoseconds(leeway: leeway))
    }

    func schedule(deadline: SQTime, repeating interval: Double, leeway: SQTimeInterval) {
        cq_source_set_timer(
            object, deadline.rawValue, Self.nanoseconds(repeating: interval),
            Self.nanoseconds(leeway: leeway))
    }

    func schedule(
        wallDeadline: SQWallTime, repeating interval: SQTimeInterval, leeway: SQTimeInterval
    ) {
        cq_source_set_timer(
            object, wallDeadline.rawValue, Self.nanoseconds(repeating: interval),
            Self.nanoseconds(leeway: leeway))
    }

    func schedule(wallDeadline: SQWallTime, repeating interval: Double, leeway: SQTimeInterval) {
        cq_source_set_timer(
            object, wallDeadline.rawValue, Self.nanoseconds(repeating: interval),
            Self.nanoseconds(leeway: leeway))
    }

    /// The C interval: `CQ_TIME_FOREVER` (all bits set) for ``SQTimeInterval/never``, else the
    /// nanoseconds (saturated); a negative interval is misuse. (`fatalError`, not
    /// `precondition`: its message is printed in optimized builds too.)
    private static func nanoseconds(repeating interval: SQTimeInterval) -> UInt64 {
        let nanoseconds = interval.clampedNanoseconds
        if interval == .never || nanoseconds == Int64.max {
            return UInt64.max  // a saturated interval is forever too
        }
        guard nanoseconds >= 0 else {
            fatalError("SQSourceTimer.schedule: the repeating interval \(interval) is negative")
        }
        return UInt64(nanoseconds)
    }

    /// The C interval for an interval in seconds: `.infinity` fires once; NaN and negative
    /// values are misuse.
    private static func nanoseconds(repeating seconds: Double) -> UInt64 {
        guard seconds >= 0 else {  // also NaN
            fatalError(
                "SQSourceTimer.schedule: the repeating interval must be a number of seconds >= 0 "
                    + "or .infinity, not \(seconds)")
        }
        if seconds.isInfinite {
            return UInt64.max
        }
        return UInt64(SQTimeInterval.clampedNanoseconds(seconds: seconds))
    }

    /// The C leeway; ``SQTimeInterval/never`` saturates (the timer may be arbitrarily late).
    private static func nanoseconds(leeway: SQTimeInterval) -> UInt64 {
        let nanoseconds = leeway.clampedNanoseconds
        guard nanoseconds >= 0 else {
            fatalError("SQSourceTimer.schedule: the leeway \(leeway) is negative")
        }
        return UInt64(nanoseconds)
    }
}
