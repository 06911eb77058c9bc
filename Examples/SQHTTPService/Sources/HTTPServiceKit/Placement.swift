import Dispatch
import SwiftQueues

/// Where the service runs its CPU work, off the event loops (`--executor`).
public enum Placement: String, CaseIterable, Sendable {
    /// Swift's default executor: a nonisolated async function, so the cooperative pool.
    case `default`
    /// SwiftQueues: `SQQueue.global(qos: .userInitiated)` as the task's executor preference.
    case swiftqueues
    /// libdispatch: `DispatchQueue.global(qos: .userInitiated)` behind a continuation.
    case dispatch

    /// Runs `work` where this placement says and returns its value. The calling task suspends
    /// (it holds no thread) while the work runs elsewhere.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        switch self {
        case .default:
            return await Self.onDefaultExecutor(work)
        case .swiftqueues:
            // Every SQQueue is a TaskExecutor: the operation (and any child task it made) runs on
            // a CQueueCore worker instead of the cooperative pool.
            return await withTaskExecutorPreference(SQQueue.global(qos: .userInitiated)) {
                await Self.onPreferredExecutor(work)
            }
        case .dispatch:
            return await withCheckedContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async {
                    continuation.resume(returning: work())
                }
            }
        }
    }

    /// A nonisolated async function runs on the global concurrent executor (the cooperative
    /// pool) unless the task prefers another executor.
    private static func onDefaultExecutor<T: Sendable>(_ work: @Sendable () -> T) async -> T {
        work()
    }

    /// The same, for the preferred executor: the hop happens on entry.
    private static func onPreferredExecutor<T: Sendable>(_ work: @Sendable () -> T) async -> T {
        work()
    }
}
