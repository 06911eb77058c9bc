import Synchronization

/// The observers of one operation or queue, and the changes not yet delivered to them. Not
/// public API.
///
/// Changes are *enqueued* by the owner under its own lock (this hub's lock is a leaf taken
/// inside it), which fixes their order; they are *delivered* after the owner's lock is
/// dropped, by one thread at a time: the thread whose ``enqueue(_:)`` found nobody delivering
/// calls ``deliver()``, which hands out changes in order until none are left (after
/// ``deliveryBudget`` of them, a pool thread takes over the rest). A handler that
/// causes another change (on the same object) only enqueues it; it is delivered after the
/// handler returns. So every observer sees every change made after it registered, once, in
/// order, and no handler runs under a lock.
///
/// Thread-safety: every method may be called from any thread.
internal final class SQOperationObservers<Change: Sendable>: @unchecked Sendable {
    private struct Observer {
        let id: UInt64
        /// The sequence number of the first change this observer receives.
        let since: UInt64
        let handler: @Sendable (Change) -> Void
        /// Called when the owner goes away (ends an `AsyncStream`).
        let close: (@Sendable () -> Void)?
    }

    private struct Hub {
        var observers: [Observer] = []
        var queued: [(sequence: UInt64, change: Change)] = []
        var head = 0
        var nextSequence: UInt64 = 0
        var nextID: UInt64 = 0
        var delivering = false
    }

    private let hub = SQMutex(Hub())

    init() {}

    /// Registers `handler` for every change enqueued from now on; returns its id for
    /// ``remove(_:)``.
    func add(
        _ handler: @escaping @Sendable (Change) -> Void,
        close: (@Sendable () -> Void)? = nil
    ) -> UInt64 {
        hub.withLock { hub in
            let id = hub.nextID
            hub.nextID += 1
            hub.observers.append(
                Observer(id: id, since: hub.nextSequence, handler: handler, close: close))
            return id
        }
    }

    /// Unregisters an observer; it receives no change enqueued after this returns (a change
    /// being delivered right now, on another thread, may still reach it).
    func remove(_ id: UInt64) {
        let removed: Observer? = hub.withLock { hub in
            guard let index = hub.observers.firstIndex(where: { $0.id == id }) else { return nil }
            return hub.observers.remove(at: index)
        }
        _ = removed  // released here, outside the lock
    }

    /// Queues `change` for delivery. Call it under the owner's lock. Returns `true` if the
    /// caller must call ``deliver()`` once it has dropped that lock.
    func enqueue(_ change: Change) -> Bool {
        hub.withLock { hub in
            if hub.observers.isEmpty {
                return false
            }
            hub.queued.append((hub.nextSequence, change))
            hub.nextSequence += 1
            if hub.delivering {
                return false
            }
            hub.delivering = true
            return true
        }
    }

    /// How many changes one call of ``deliver()`` hands out before it passes the rest to a
    /// pool thread. Under a steady stream of changes (operations added from several threads)
    /// the delivering thread found more queued every time it looked, and never returned: the
    /// thread that set `isSuspended` on an observed queue stayed in the setter for good.
    static var deliveryBudget: Int { 256 }

    /// Delivered changes dropped from the front of the queue once this many have piled up
    /// (and they are at least half of it): they hold their operations. The queue was emptied
    /// only when delivery caught up, so under a steady stream it kept every change, and every
    /// finished operation, alive (5.8 million after 8 s, 1.8 GB).
    static var compactionThreshold: Int { 64 }

    private enum Step {
        case deliver(Change, [@Sendable (Change) -> Void])
        case done
        case handOff
    }

    /// Delivers queued changes in order until none are left, or hands the rest to a pool
    /// thread after ``deliveryBudget`` of them (still one deliverer at a time, in order). Call
    /// it with no lock held, only after ``enqueue(_:)`` returned `true`.
    func deliver() {
        var budget = Self.deliveryBudget
        while true {
            let step: Step = hub.withLock { hub in
                guard hub.head < hub.queued.count else {
                    hub.queued.removeAll(keepingCapacity: hub.queued.count <= 1024)
                    hub.head = 0
                    hub.delivering = false
                    return .done
                }
                if budget == 0 {
                    return .handOff  // `delivering` stays set: the pool thread goes on
                }
                let item = hub.queued[hub.head]
                hub.head += 1
                if hub.head >= Self.compactionThreshold && hub.head * 2 >= hub.queued.count {
                    hub.queued.removeFirst(hub.head)
                    hub.head = 0
                }
                let handlers = hub.observers.filter { $0.since <= item.sequence }.map(\.handler)
                return .deliver(item.change, handlers)
            }
            switch step {
            case .done:
                return
            case .handOff:
                SQQueue.global().async { self.deliver() }
                return
            case .deliver(let change, let handlers):
                budget -= 1
                for handler in handlers {
                    handler(change)
                }
            }
        }
    }

    /// How many changes the hub holds, delivered ones not yet dropped included (tests).
    var storedChangeCount: Int {
        hub.withLock { $0.queued.count }
    }

    /// Calls every observer's `close` (the owner is going away) and unregisters them all.
    func closeAll() {
        let observers = hub.withLock { hub in
            let observers = hub.observers
            hub.observers = []
            return observers
        }
        for observer in observers {
            observer.close?()
        }
    }
}
