import CoreMetrics
import SwiftQueues

/// Reports SwiftQueues' runtime counters (``SQRuntime/counters``) and pool gauges through
/// swift-metrics, every `interval`, from a timer source on a queue of its own.
///
/// Counters (monotonic; each report adds what happened since the last one):
/// `swiftqueues_tasks_total`, `swiftqueues_steals_total`, `swiftqueues_parks_total`,
/// `swiftqueues_unparks_total`, `swiftqueues_spare_threads_total`,
/// `swiftqueues_thread_limit_hits_total`, `swiftqueues_timer_fires_total`,
/// `swiftqueues_source_events_total`. Gauges: `swiftqueues_threads`, `swiftqueues_workers`,
/// `swiftqueues_blocked_threads`, `swiftqueues_spare_threads`, `swiftqueues_queues` (live
/// queues, global ones included).
///
/// ```swift
/// MetricsSystem.bootstrap(myPrometheusFactory)
/// let reporter = SQMetricsReporter(interval: .seconds(10))
/// reporter.start()
/// ```
///
/// Thread-safe. The metrics are made with the factory given, or with the one
/// `MetricsSystem.bootstrap` installed (made at `init`: bootstrap first).
public final class SQMetricsReporter: @unchecked Sendable {
    /// The names of the counters, in the order of ``SQRuntime/Counters``' fields.
    public static let counterNames = [
        "swiftqueues_tasks_total", "swiftqueues_steals_total", "swiftqueues_parks_total",
        "swiftqueues_unparks_total", "swiftqueues_spare_threads_total",
        "swiftqueues_thread_limit_hits_total", "swiftqueues_timer_fires_total",
        "swiftqueues_source_events_total",
    ]
    /// The names of the gauges.
    public static let gaugeNames = [
        "swiftqueues_threads", "swiftqueues_workers", "swiftqueues_blocked_threads",
        "swiftqueues_spare_threads", "swiftqueues_queues",
    ]

    private let interval: SQTimeInterval
    private let queue = SQSerialQueue(label: "swiftqueues.metrics")
    private let counters: [Counter]
    private let gauges: [Gauge]
    private let includeSnapshot: Bool
    // Touched only on `queue` (reports, start, stop).
    private var last: [UInt64]
    private var timer: (any SQSourceTimer)?

    /// - Parameters:
    ///   - interval: how often to report (default 10 s).
    ///   - dimensions: added to every metric (a service name, say).
    ///   - includeSnapshot: also report `swiftqueues_queues`, the live queue count, which
    ///     needs ``SQRuntime/snapshot()``: it walks every queue, so keep it off with very many
    ///     queues. The other gauges are reported either way (``SQRuntime/pool``).
    ///   - factory: the metrics backend; `nil` means `MetricsSystem.factory`.
    public init(
        interval: SQTimeInterval = .seconds(10), dimensions: [(String, String)] = [],
        includeSnapshot: Bool = true, factory: (any MetricsFactory)? = nil
    ) {
        self.interval = interval
        self.includeSnapshot = includeSnapshot
        let factory = factory ?? MetricsSystem.factory
        counters = Self.counterNames.map {
            Counter(label: $0, dimensions: dimensions, factory: factory)
        }
        gauges = Self.gaugeNames.map { Gauge(label: $0, dimensions: dimensions, factory: factory) }
        last = Array(repeating: 0, count: Self.counterNames.count)
    }

    deinit {
        timer?.cancel()
    }

    /// Starts reporting: once now, then every `interval`. Calling it again does nothing.
    public func start() {
        queue.sync {
            guard timer == nil else { return }
            let t = SQSource.makeTimerSource(queue: queue)
            t.setEventHandler { [weak self] in self?.reportLocked() }
            t.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(100))
            timer = t
            t.activate()
        }
    }

    /// Stops reporting (a report in progress finishes).
    public func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
        }
    }

    /// Reports now, whether started or not (and waits until it is done).
    public func report() {
        queue.sync { reportLocked() }
    }

    private func reportLocked() {
        let c = SQRuntime.counters
        let now = [
            c.tasksRun, c.steals, c.parks, c.unparks, c.spareThreads, c.threadLimitHits,
            c.timerFires, c.sourceEvents,
        ]
        for (i, value) in now.enumerated() where value > last[i] {
            counters[i].increment(by: Int64(clamping: value - last[i]))
            last[i] = value
        }
        // The pool's gauges from its figures alone (with includeSnapshot off, none of them
        // was reported: they came from the snapshot, which only the queue count needs).
        let pool = SQRuntime.pool
        gauges[0].record(pool.threads)
        gauges[1].record(pool.workers)
        gauges[2].record(pool.blockedThreads)
        gauges[3].record(pool.spareThreads)
        if includeSnapshot {
            gauges[4].record(SQRuntime.snapshot().queues.count)
        }
    }
}
