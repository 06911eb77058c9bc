extension SQTimeInterval {
    /// `duration` as a number of nanoseconds (``nanoseconds(_:)``): sub-nanosecond parts are
    /// truncated toward zero, and durations beyond the `Int` range of nanoseconds (about 292
    /// years) saturate, which arithmetic then treats as ``never``.
    ///
    /// A pure function; thread-safe. Dispatch has no equivalent (Swift's `Duration` postdates
    /// `DispatchTimeInterval`).
    @inlinable
    public init(_ duration: Duration) {
        let nanoseconds = SQTimeInterval.clampedNanoseconds(duration)
        // Beyond the range (or at its end: 292 years) is forever.
        self = nanoseconds == Int64.max ? .never : .nanoseconds(Int(nanoseconds))
    }

    /// `duration` in nanoseconds, saturated to the `Int64` range; sub-nanosecond parts
    /// truncated toward zero.
    @inlinable
    internal static func clampedNanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow {
            return seconds < 0 ? Int64.min : Int64.max
        }
        // |attoseconds / 10^9| < 10^9, so only this addition can overflow.
        let (total, carry) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if carry {
            return scaled < 0 ? Int64.min : Int64.max
        }
        return total
    }
}
