/// A duration for time arithmetic (``SQTime`` `+` `.milliseconds(5)`).
///
/// Two intervals are equal when they are the same number of nanoseconds
/// (`.seconds(1) == .milliseconds(1000)`); ``never`` equals only itself, as in Dispatch.
/// Conversions to nanoseconds saturate: in arithmetic, a duration beyond the 64-bit range
/// counts as ``never`` (`now + .seconds(Int.max)` is the distant future).
///
/// Dispatch: `DispatchTimeInterval`.
public enum SQTimeInterval: Sendable {
    case seconds(Int)
    case milliseconds(Int)
    case microseconds(Int)
    case nanoseconds(Int)
    /// Forever: `time + .never` is the distant future.
    case never

    /// The interval in nanoseconds, saturated to the `Int64` range (``never``: `Int64.max`).
    @inlinable
    internal var clampedNanoseconds: Int64 {
        switch self {
        case .seconds(let n): return SQTimeInterval.scale(n, by: 1_000_000_000)
        case .milliseconds(let n): return SQTimeInterval.scale(n, by: 1_000_000)
        case .microseconds(let n): return SQTimeInterval.scale(n, by: 1_000)
        case .nanoseconds(let n): return Int64(n)
        case .never: return Int64.max
        }
    }

    @inlinable
    internal static func scale(_ value: Int, by factor: Int64) -> Int64 {
        let (product, overflow) = Int64(value).multipliedReportingOverflow(by: factor)
        if overflow {
            return value < 0 ? Int64.min : Int64.max
        }
        return product
    }

    /// `seconds` in nanoseconds, saturated to the `Int64` range (NaN counts as forever).
    @inlinable
    internal static func clampedNanoseconds(seconds: Double) -> Int64 {
        let nanoseconds = seconds * 1e9
        if nanoseconds.isNaN || nanoseconds >= Double(Int64.max) {
            return Int64.max
        }
        if nanoseconds <= Double(Int64.min) {
            return Int64.min
        }
        return Int64(nanoseconds)
    }

    /// `-nanoseconds`, saturated.
    @inlinable
    internal static func negated(_ nanoseconds: Int64) -> Int64 {
        nanoseconds == Int64.min ? Int64.max : -nanoseconds
    }
}

extension SQTimeInterval: Hashable {
    @inlinable
    public static func == (lhs: SQTimeInterval, rhs: SQTimeInterval) -> Bool {
        // As Dispatch: `.never` equals only itself (not a finite interval that saturates to
        // the same count, such as `.seconds(Int.max)`); the others compare their lengths.
        switch (lhs, rhs) {
        case (.never, .never): return true
        case (.never, _), (_, .never): return false
        default: return lhs.clampedNanoseconds == rhs.clampedNanoseconds
        }
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        if case .never = self {
            hasher.combine(true)
        } else {
            hasher.combine(false)
            hasher.combine(clampedNanoseconds)
        }
    }
}
