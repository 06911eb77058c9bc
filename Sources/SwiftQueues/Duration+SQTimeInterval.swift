extension Duration {
    /// `interval` as a `Duration`, exactly; `nil` for ``SQTimeInterval/never``, which no
    /// `Duration` represents.
    ///
    /// A pure function; thread-safe. Dispatch has no equivalent.
    @inlinable
    public init?(_ interval: SQTimeInterval) {
        switch interval {
        case .seconds(let n): self = .seconds(n)
        case .milliseconds(let n): self = .milliseconds(n)
        case .microseconds(let n): self = .microseconds(n)
        case .nanoseconds(let n): self = .nanoseconds(n)
        case .never: return nil
        }
    }
}
