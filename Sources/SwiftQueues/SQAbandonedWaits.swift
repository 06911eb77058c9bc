import CQueueCore
import Synchronization

/// The notifies left registered by cancelled async waits (``SQGroup/waitUntilEmpty()``,
/// ``SQWorkItem/waitUntilFinished()``), and when to purge them. A cancelled wait's notify
/// stays registered until the group empties or the item runs, which may be late or never:
/// once as many such are counted as half the registrations the last purge left (at least
/// 64), they are purged in one pass, so a busy object keeps fewer registrations than half its
/// live waiters plus 64, each cancellation costing O(1) amortized. Not public API.
internal struct SQAbandonedWaits: ~Copyable {
    private let count = Atomic<Int>(0)
    private let threshold = Atomic<Int>(64)

    init() {}

    /// What a purge drops: the notifies whose waiter was cancelled.
    static let isAbandoned: @convention(c) (UnsafeMutableRawPointer?) -> Bool = { context in
        // safety: every notify with sqFireCallback holds a retained SQCallback.
        Unmanaged<SQCallback>.fromOpaque(context!).takeUnretainedValue().isAbandoned
    }

    /// What a purge does with each notify it drops: gives back its reference.
    static let release: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
        Unmanaged<SQCallback>.fromOpaque(context!).release()
    }

    /// A cancelled wait left its notify registered; purges when the count is reached.
    /// `purge` runs the C purge with `isAbandoned` and `release` and returns how many notifies
    /// are left.
    borrowing func note(purge: () -> Int) {
        let abandoned = count.wrappingAdd(1, ordering: .relaxed).newValue
        guard abandoned >= threshold.load(ordering: .relaxed),
            count.compareExchange(expected: abandoned, desired: 0, ordering: .relaxed).exchanged
        else { return }
        threshold.store(max(64, purge() / 2), ordering: .relaxed)
    }
}
