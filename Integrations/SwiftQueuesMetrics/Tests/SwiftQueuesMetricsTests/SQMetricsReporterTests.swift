import CoreMetrics
import Foundation
import SwiftQueues
import SwiftQueuesMetrics
import XCTest

/// A tiny in-memory metrics backend: counters sum their increments, recorders keep the last
/// value.
final class TestMetrics: MetricsFactory, @unchecked Sendable {
    final class Store: @unchecked Sendable {
        let lock = NSLock()
        var counters: [String: Int64] = [:]
        var gauges: [String: Double] = [:]
    }
    let store = Store()

    final class TestCounter: CounterHandler, @unchecked Sendable {
        let label: String
        let store: Store
        init(label: String, store: Store) {
            self.label = label
            self.store = store
        }
        func increment(by amount: Int64) {
            store.lock.lock()
            store.counters[label, default: 0] += amount
            store.lock.unlock()
        }
        func reset() {
            store.lock.lock()
            store.counters[label] = 0
            store.lock.unlock()
        }
    }

    final class TestRecorder: RecorderHandler, @unchecked Sendable {
        let label: String
        let store: Store
        init(label: String, store: Store) {
            self.label = label
            self.store = store
        }
        func record(_ value: Int64) { record(Double(value)) }
        func record(_ value: Double) {
            store.lock.lock()
            store.gauges[label] = value
            store.lock.unlock()
        }
    }

    final class TestTimer: TimerHandler, @unchecked Sendable {
        func recordNanoseconds(_ duration: Int64) {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        TestCounter(label: label, store: store)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool)
        -> any RecorderHandler
    {
        TestRecorder(label: label, store: store)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        TestTimer()
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    func counter(_ name: String) -> Int64 {
        store.lock.lock()
        defer { store.lock.unlock() }
        return store.counters[name] ?? 0
    }
    func gauge(_ name: String) -> Double? {
        store.lock.lock()
        defer { store.lock.unlock() }
        return store.gauges[name]
    }
}

final class SQMetricsReporterTests: XCTestCase {
    private func runTasks(_ n: Int) {
        let group = SQGroup()
        let queue = SQSerialQueue(label: "metrics.test")
        for _ in 0..<n {
            queue.async(group: group) {}
            SQQueue.global().async(group: group) {}
        }
        group.wait()
        queue.sync {}
    }

    func testCountersAreEmittedAndGrow() {
        let metrics = TestMetrics()
        let reporter = SQMetricsReporter(factory: metrics)
        runTasks(100)
        reporter.report()
        let first = metrics.counter("swiftqueues_tasks_total")
        XCTAssertGreaterThanOrEqual(first, 200)
        XCTAssertNotNil(metrics.gauge("swiftqueues_threads"))
        XCTAssertGreaterThanOrEqual(metrics.gauge("swiftqueues_workers") ?? 0, 1)
        XCTAssertGreaterThanOrEqual(metrics.gauge("swiftqueues_queues") ?? 0, 5)
        runTasks(500)
        reporter.report()
        XCTAssertGreaterThanOrEqual(metrics.counter("swiftqueues_tasks_total"), first + 1000)
        for name in SQMetricsReporter.counterNames {
            XCTAssertGreaterThanOrEqual(metrics.counter(name), 0, name)
        }
    }

    /// Without the snapshot, the pool's gauges are still reported; only the queue count is
    /// not (none of the five was).
    func testPoolGaugesWithoutSnapshot() {
        let metrics = TestMetrics()
        let reporter = SQMetricsReporter(includeSnapshot: false, factory: metrics)
        runTasks(10)
        reporter.report()
        XCTAssertGreaterThanOrEqual(metrics.gauge("swiftqueues_threads") ?? 0, 1)
        XCTAssertGreaterThanOrEqual(metrics.gauge("swiftqueues_workers") ?? 0, 1)
        XCTAssertNotNil(metrics.gauge("swiftqueues_blocked_threads"))
        XCTAssertNotNil(metrics.gauge("swiftqueues_spare_threads"))
        XCTAssertNil(metrics.gauge("swiftqueues_queues"))
    }

    /// The timer reports by itself once started.
    func testStartedReporterReportsPeriodically() {
        let metrics = TestMetrics()
        let reporter = SQMetricsReporter(interval: .milliseconds(10), factory: metrics)
        runTasks(50)
        reporter.start()
        let deadline = Date().addingTimeInterval(60)
        while metrics.counter("swiftqueues_timer_fires_total") < 2 && Date() < deadline {
            usleep(5000)
        }
        reporter.stop()
        XCTAssertGreaterThanOrEqual(metrics.counter("swiftqueues_tasks_total"), 100)
        XCTAssertGreaterThanOrEqual(metrics.counter("swiftqueues_timer_fires_total"), 2)
    }
}
