// Swift concurrency on our runtime against Swift's default executor (libdispatch's global
// queues on Linux): the second column of these rows is the default executor, not the Dispatch
// overlay (Workload.other names it).

@_spi(ExperimentalCustomExecutors) import _Concurrency
import Dispatch
import Foundation
import SwiftQueues
import Synchronization

/// Runs `body` in a task on the default executor and blocks the calling (main) thread until it
/// returns. The main thread is not one of any pool's threads, so blocking it starves nobody.
func blockOn<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<T?>(nil)
    Task.detached {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}

@inline(never) func trivialChild(_ i: Int) -> Int { i & 1 }

/// A TaskGroup of `n` trivial children; returns the sum of their results.
@Sendable func taskGroupSum(_ n: Int) async -> Int {
    await withTaskGroup(of: Int.self) { group in
        for i in 0..<n {
            group.addTask { trivialChild(i) }
        }
        var sum = 0
        for await value in group {
            sum += value
        }
        return sum
    }
}

func taskGroupWorkload() -> Workload {
    Workload(
    name: "taskgroup", title: "TaskGroup of trivial children: our pool as the task executor vs the default executor (goal <= 1 us/child)",
    unit: "ns/child", ops: quick ? 100_000 : 1_000_000, goal: nil,
    ours: { n in
        let t0 = nowNs()
        let sum = blockOn {
            await withTaskExecutorPreference(SQQueue.global()) { await taskGroupSum(n) }
        }
        let t = nowNs() - t0
        check(sum == n / 2, "ours: task group sum \(sum)")
        return t
    },
    dispatch: { n in
        let t0 = nowNs()
        let sum = blockOn { await taskGroupSum(n) }
        let t = nowNs() - t0
        check(sum == n / 2, "default: task group sum \(sum)")
        return t
    },
    other: "default exec")
}

/// fib(n) with `async let` on both halves above the cutoff, sequential below it.
@Sendable func asyncFib(_ n: Int) async -> Int {
    if n <= 12 {
        return sequentialFib(n)
    }
    async let a = asyncFib(n - 1)
    async let b = asyncFib(n - 2)
    return await a + b
}

func sequentialFib(_ n: Int) -> Int { n < 2 ? n : sequentialFib(n - 1) + sequentialFib(n - 2) }

func fibWorkload() -> Workload {
    Workload(
    name: "fib_async_let", title: "fib(30) with async let (sequential at n <= 12): our pool as the task executor vs the default",
    unit: "us/fib(30)", ops: 1, goal: nil,
    ours: { _ in
        let t0 = nowNs()
        let value = blockOn {
            await withTaskExecutorPreference(SQQueue.global()) { await asyncFib(30) }
        }
        let t = nowNs() - t0
        check(value == 832_040, "ours: fib(30) = \(value)")
        return t / 1_000
    },
    dispatch: { _ in
        let t0 = nowNs()
        let value = blockOn { await asyncFib(30) }
        let t = nowNs() - t0
        check(value == 832_040, "default: fib(30) = \(value)")
        return t / 1_000
    },
    other: "default exec")
}

/// An actor on one of our serial queues.
actor QueuePinger {
    let queue: SQSerialQueue
    var count = 0

    init(_ label: String) {
        queue = SQSerialQueue(label: label)
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        queue.asUnownedSerialExecutor()
    }

    func pong() {
        count += 1
    }

    func ping(_ other: QueuePinger, times: Int) async -> Int {
        for _ in 0..<times {
            await other.pong()
        }
        return await other.count
    }
}

/// The same actor on the default actor executor.
actor DefaultPinger {
    var count = 0

    func pong() {
        count += 1
    }

    func ping(_ other: DefaultPinger, times: Int) async -> Int {
        for _ in 0..<times {
            await other.pong()
        }
        return await other.count
    }
}

func actorPingPongWorkload() -> Workload {
    Workload(
    name: "actor_pingpong", title: "one actor calls another (a round trip): actors on SQSerialQueue executors vs default actors",
    unit: "ns/call", ops: quick ? 100_000 : 1_000_000, goal: nil,
    ours: { n in
        let a = QueuePinger("bench.ping"), b = QueuePinger("bench.pong")
        let t0 = nowNs()
        let count = blockOn { await a.ping(b, times: n) }
        let t = nowNs() - t0
        check(count == n, "ours: \(count) pongs of \(n)")
        return t
    },
    dispatch: { n in
        let a = DefaultPinger(), b = DefaultPinger()
        let t0 = nowNs()
        let count = blockOn { await a.ping(b, times: n) }
        let t = nowNs() - t0
        check(count == n, "default: \(count) pongs of \(n)")
        return t
    },
    other: "default exec")
}

final class AtomicWord: Sendable {
    let value = Atomic<UInt64>(0)
}

/// The start latency of a small high-priority task while every CPU runs a long CPU-bound task
/// of default priority: returns the 99th percentile in nanoseconds. `longTask` starts one long
/// task running the closure it is given; `smallTask` starts one small task running its closure.
func latencyP99(
    samples: Int,
    longTask: (@escaping @Sendable () -> Void) -> Void,
    smallTask: (@escaping @Sendable () -> Void) -> Void
) -> UInt64 {
    let cpus = max(ProcessInfo.processInfo.activeProcessorCount, 1)
    let stop = AtomicWord()
    let started = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    for _ in 0..<cpus {
        longTask {
            started.signal()
            let deadline = nowNs() + 3_000_000_000  // bounded: the other side may never yield
            var x: UInt64 = 1
            while stop.value.load(ordering: .relaxed) == 0 && nowNs() < deadline {
                for _ in 0..<1_000 { x = x &* 6364136223846793005 &+ 1 }
            }
            sink(x)
            finished.signal()
        }
    }
    for _ in 0..<cpus { started.wait() }
    var latencies: [UInt64] = []
    let ran = DispatchSemaphore(value: 0)
    let startedAt = AtomicWord()
    for _ in 0..<samples {
        let t0 = nowNs()
        smallTask {
            startedAt.value.store(nowNs(), ordering: .relaxed)
            ran.signal()
        }
        ran.wait()
        latencies.append(startedAt.value.load(ordering: .relaxed) - t0)
    }
    stop.value.store(1, ordering: .relaxed)
    for _ in 0..<cpus { finished.wait() }
    latencies.sort()
    return latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
}

func latencyWorkload() -> Workload {
    Workload(
    name: "latency_busy_p99", title: "start of a small high-priority task while every CPU runs a long default-priority task: p99",
    unit: "ns p99", ops: 1, goal: nil,
    ours: { _ in
        latencyP99(
            samples: quick ? 50 : 200,
            longTask: { work in Task(executorPreference: SQQueue.global()) { work() } },
            smallTask: { work in
                Task(executorPreference: SQQueue.global(qos: .userInitiated)) { work() }
            })
    },
    dispatch: { _ in
        latencyP99(
            samples: quick ? 50 : 200,
            longTask: { work in Task.detached(priority: .medium) { work() } },
            smallTask: { work in Task.detached(priority: .high) { work() } })
    },
    other: "default exec")
}

/// `try await queue.run { ... }` against the same hand-off written with a continuation and
/// the Dispatch overlay.
func queueRunWorkload() -> Workload {
    Workload(
    name: "queue_run", title: "try await queue.run { } onto a serial queue vs a continuation resumed by DispatchQueue.async",
    unit: "ns/op", ops: quick ? 20_000 : 200_000, goal: nil,
    ours: { n in
        let q = SQSerialQueue(label: "bench.run")
        let t0 = nowNs()
        let sum = blockOn { () -> Int in
            var sum = 0
            for i in 0..<n { sum += (try? await q.run { i & 1 }) ?? 0 }
            return sum
        }
        let t = nowNs() - t0
        check(sum == n / 2, "ours: run sum \(sum)")
        return t
    },
    dispatch: { n in
        let q = DispatchQueue(label: "bench.run")
        let t0 = nowNs()
        let sum = blockOn { () -> Int in
            var sum = 0
            for i in 0..<n {
                sum += await withCheckedContinuation { c in q.async { c.resume(returning: i & 1) } }
            }
            return sum
        }
        let t = nowNs() - t0
        check(sum == n / 2, "Dispatch: run sum \(sum)")
        return t
    })
}

/// The global-executor take-over, swapped out for the default side and back in for ours (a
/// benchmark-only trick: the library's call cannot be undone). It is two things: the runtime's
/// enqueue hooks, saved once installed, and the standard library's default executor object
/// (`Task.defaultExecutor`, which the install replaces too: without swapping it back, the
/// "default" side ran on our pool as well and the row compared ours with ours).
final class GlobalHooks: @unchecked Sendable {
    static let shared = GlobalHooks()
    private let slots: [UnsafeMutableRawPointer]
    private var installed: [UnsafeRawPointer?] = []
    /// The default executor object before the install, and ours after it.
    private let originalDefault: any TaskExecutor
    private var oursDefault: (any TaskExecutor)?

    private init() {
        let names: [String] = [
            "swift_task_enqueueGlobal_hook", "swift_task_enqueueGlobalWithDelay_hook",
            "swift_task_enqueueGlobalWithDeadline_hook",
        ]
        slots = names.map { name in dlsym(nil, name)! }
        originalDefault = Task.defaultExecutor
        SwappedExecutors.main = MainActor.executor
    }

    /// Installs ours (the first time through the library) and returns whether it worked.
    func useOurs() -> Bool {
        if installed.isEmpty {
            guard SQQueue.tryInstallAsGlobalConcurrentExecutor() else { return false }
            installed = slots.map { $0.load(as: UnsafeRawPointer?.self) }
            oursDefault = Task.defaultExecutor
        }
        for (slot, hook) in zip(slots, installed) { slot.storeBytes(of: hook, as: UnsafeRawPointer?.self) }
        SwappedExecutors.chosen = oursDefault
        _createExecutors(factory: SwappedExecutors.self)
        return true
    }

    func useDefault() {
        for slot in slots { slot.storeBytes(of: nil, as: UnsafeRawPointer?.self) }
        SwappedExecutors.chosen = originalDefault
        _createExecutors(factory: SwappedExecutors.self)
    }
}

/// The executors `GlobalHooks` hands the standard library (the main one never changes).
enum SwappedExecutors: ExecutorFactory {
    nonisolated(unsafe) static var main: (any MainExecutor)?
    nonisolated(unsafe) static var chosen: (any TaskExecutor)?
    static var mainExecutor: any MainExecutor { main! }
    static var defaultExecutor: any TaskExecutor { chosen! }
}

func globalExecutorWorkload() -> Workload {
    Workload(
    name: "taskgroup_global", title: "TaskGroup of trivial children without preference: our pool installed as the global executor vs the default",
    unit: "ns/child", ops: quick ? 100_000 : 1_000_000, goal: nil,
    ours: { n in
        check(GlobalHooks.shared.useOurs(), "installing the global executor")
        defer { GlobalHooks.shared.useDefault() }
        let t0 = nowNs()
        let sum = blockOn { await taskGroupSum(n) }
        let t = nowNs() - t0
        check(sum == n / 2, "ours (global): task group sum \(sum)")
        return t
    },
    dispatch: { n in
        GlobalHooks.shared.useDefault()
        let t0 = nowNs()
        let sum = blockOn { await taskGroupSum(n) }
        let t = nowNs() - t0
        check(sum == n / 2, "default: task group sum \(sum)")
        return t
    },
    other: "default exec")
}

func concurrencyWorkloads() -> [Workload] {
    [taskGroupWorkload(), fibWorkload(), actorPingPongWorkload(), latencyWorkload(),
     queueRunWorkload(), globalExecutorWorkload()]
}
