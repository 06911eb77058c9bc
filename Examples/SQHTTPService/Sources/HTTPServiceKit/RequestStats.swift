import Synchronization

/// Counters shared by the request handlers, the one-second timer and the shutdown summary.
public final class RequestStats: Sendable {
    private let hashes = Atomic<Int>(0)
    private let health = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    /// The timer's state: written only by its handler (a source's handlers never overlap).
    private let ticks = Mutex(Ticks())

    private struct Ticks {
        var lastTotal = 0
        var lastTime = ContinuousClock.now
        var peakPerSecond = 0
    }

    public init() {}

    public func countHash() { hashes.add(1, ordering: .relaxed) }
    public func countHealth() { health.add(1, ordering: .relaxed) }
    public func countFailure() { failures.add(1, ordering: .relaxed) }

    public var hashRequests: Int { hashes.load(ordering: .relaxed) }
    public var healthRequests: Int { health.load(ordering: .relaxed) }
    public var failedRequests: Int { failures.load(ordering: .relaxed) }
    public var totalRequests: Int { hashRequests + healthRequests + failedRequests }

    /// Records one timer tick: returns the total, and the rate since the previous tick in requests
    /// per second (measured over the real interval, so a late tick does not inflate it).
    public func tick() -> (total: Int, perSecond: Int) {
        let total = totalRequests
        let now = ContinuousClock.now
        return ticks.withLock { state in
            let elapsed = now - state.lastTime
            let seconds = Double(elapsed.components.seconds)
                + Double(elapsed.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Int((Double(total - state.lastTotal) / seconds).rounded()) : 0
            state.lastTotal = total
            state.lastTime = now
            state.peakPerSecond = max(state.peakPerSecond, rate)
            return (total, rate)
        }
    }

    /// The highest rate seen between two timer ticks, in requests per second.
    public var peakPerTick: Int { ticks.withLock { $0.peakPerSecond } }

    /// The one-line summary printed at shutdown.
    public func summary(placement: Placement, seconds: Double) -> String {
        let total = totalRequests
        let rate = seconds > 0 ? Double(total) / seconds : 0
        return "sq-http-service: served \(total) requests (hash \(hashRequests), health \(healthRequests), "
            + "failed \(failedRequests)) in \(formatted(seconds)) s, \(Int(rate.rounded())) req/s average, "
            + "peak \(peakPerTick) req/s, executor \(placement.rawValue)"
    }

    private func formatted(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
