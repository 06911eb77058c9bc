import CQueueCore
import Synchronization

// Tasks waiting on a semaphore without blocking a thread.
//
// The count stays in the C semaphore; tasks that find it exhausted wait in a FIFO list of the
// Swift wrapper, and `signal()` hands the resource to the first of them. The race between a
// task that lists itself and a signal that increments the C count is a Dekker pair:
//
//   waiter:  list itself (count += 1)   fence   retry the C count (take without waiting)
//   signal:  C count += 1               fence   read the listed count
//
// With both fences sequentially consistent, either the waiter's retry sees the increment (it
// takes the resource itself), or the signal sees the waiter listed (it takes the resource back
// from the C count and hands it over), or both (then exactly one of the two C takes succeeds,
// since the C count holds a single unit for them). Both C takes use CQ_TIME_NOW, which only
// takes a unit that is there and never waits (a take that counted itself as a waiter could
// wait for the next signal, and the two tasks of a ping-pong stopped for good). A task that
// got a resource twice (its
// own retry and a hand-off) gives one back with `signal()`; so does a signal whose listed
// waiter was cancelled meanwhile, after looking for the next one.

/// One task in ``SQSemaphore/waitForSignal()``: resumed with `()` once it holds the resource.
/// `previous`/`next` link it into its semaphore's list; they are read and written only under the
/// list's mutex.
internal final class SQSemaphoreWaiter: SQResumption<Void>, @unchecked Sendable {
    var previous: SQSemaphoreWaiter?
    var next: SQSemaphoreWaiter?
    var isListed = false
}

/// The FIFO list of waiting tasks, doubly linked. Lives inside the semaphore's lock. A node is
/// linked only while its task waits (the task, or the signal that serves it, unlinks it).
internal struct SQSemaphoreWaitList {
    private var head: SQSemaphoreWaiter?
    private var tail: SQSemaphoreWaiter?
    private(set) var count = 0

    init() {}

    mutating func append(_ waiter: SQSemaphoreWaiter) {
        waiter.isListed = true
        waiter.next = nil
        waiter.previous = tail
        if let tail {
            tail.next = waiter
        } else {
            head = waiter
        }
        tail = waiter
        count += 1
    }

    mutating func popFirst() -> SQSemaphoreWaiter? {
        guard let first = head else {
            return nil
        }
        remove(first)
        return first
    }

    /// Takes `waiter` out if it is listed; returns whether it was.
    @discardableResult
    mutating func remove(_ waiter: SQSemaphoreWaiter) -> Bool {
        guard waiter.isListed else {
            return false
        }
        if let previous = waiter.previous {
            previous.next = waiter.next
        } else {
            head = waiter.next
        }
        if let next = waiter.next {
            next.previous = waiter.previous
        } else {
            tail = waiter.previous
        }
        waiter.previous = nil
        waiter.next = nil
        waiter.isListed = false
        count -= 1
        return true
    }
}

extension SQSemaphore {
    /// Decrements the count, suspending the calling task (not blocking a thread) until a
    /// ``signal()`` if it was not positive: the async counterpart of ``wait()``. Returns at once
    /// if the resource is available.
    ///
    /// Tasks waiting here are served in the order they started waiting; a signal prefers them
    /// to threads blocked in ``wait()`` (which sleep in the C core). The wait that returns has
    /// acquire ordering with the signal that satisfied it.
    ///
    /// Cancellation: a cancelled task stops waiting at once and this throws
    /// `CancellationError` without taking the resource.
    ///
    /// Cost: one atomic operation when the resource is available; otherwise one allocation, a
    /// lock and a fence. Thread-safe. Dispatch: none.
    public func waitForSignal() async throws(CancellationError) {
        if cq_semaphore_wait(handle, 0) == 0 {  // CQ_TIME_NOW: takes without waiting
            return
        }
        let waiter = SQSemaphoreWaiter()
        let granted: Void? = await waiter.wait {
            asyncWaiters.withLock { list in
                list.append(waiter)
                asyncWaiterCount.store(list.count, ordering: .relaxed)
            }
            // seq_cst fence: pairs with the one in signal() (see the top of this file).
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            guard cq_semaphore_wait(handle, 0) == 0 else {
                return  // a signal will hand us the resource
            }
            let wasListed = asyncWaiters.withLock { list in
                let removed = list.remove(waiter)
                asyncWaiterCount.store(list.count, ordering: .relaxed)
                return removed
            }
            if wasListed && waiter.claim() {
                waiter.finish(())
            } else {
                // A signal took us off the list and hands us a resource too, or we were
                // cancelled: this one goes back.
                signal()
            }
        }
        if granted == nil {
            // Cancelled. If a signal took us off the list first, its hand-off failed (we could
            // not be claimed) and it passes the resource on; otherwise we leave the list.
            asyncWaiters.withLock { list in
                list.remove(waiter)
                asyncWaiterCount.store(list.count, ordering: .relaxed)
            }
            throw CancellationError()
        }
    }

    /// ``signal()`` while tasks are listed: gives the resource to the first listed task that
    /// can still take it, without touching the C count. False if none could (the list emptied,
    /// or every task in it was cancelled): the caller signals the C count then. A listed task
    /// whose own retry of the C count succeeded meanwhile finds itself off the list and gives
    /// that unit back (waitForSignal).
    @usableFromInline
    internal func handToFirstAsyncWaiter() -> Bool {
        while true {
            let first = asyncWaiters.withLock { list in
                let first = list.popFirst()
                asyncWaiterCount.store(list.count, ordering: .relaxed)
                return first
            }
            guard let first else {
                return false
            }
            if first.claim() {
                first.finish(())
                return true
            }
            // Cancelled: it leaves without the resource; try the next one.
        }
    }

    /// The slow path of ``signal()``, taken when tasks are listed: moves the resource the C
    /// signal just added to the first listed task that can still take it. `woken` is what the C
    /// signal returned.
    @usableFromInline
    internal func handOffToAsyncWaiter(woken: Int) -> Int {
        while asyncWaiterCount.load(ordering: .relaxed) != 0 {
            // Take the resource back; if it is gone, a thread or a task's retry took it.
            guard cq_semaphore_wait(handle, 0) == 0 else {
                return woken
            }
            if handToFirstAsyncWaiter() {
                return 1
            }
            // Nobody to give it to (the list emptied, its tasks cancelled): put it back, and
            // look again, since a task may have listed itself meanwhile.
            _ = cq_semaphore_signal(handle)
            atomicMemoryFence(ordering: .sequentiallyConsistent)
        }
        return woken
    }
}
