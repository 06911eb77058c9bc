import CQueueCore

// Retired operations: who frees the operations a queue makes for itself.
//
// `addOperation { ... }` allocates an operation on the adding thread, and a pool thread
// finishes it. If the pool thread also freed it, every operation would be freed by a thread
// other than the one that allocated it: glibc then returns the memory to the adding thread's
// arena under that arena's lock, which the adding thread takes for every allocation, and the
// two sides spend their time handing the lock back and forth (a third of a pool thread's
// time in `perf`, at 200k additions). Instead, the queue keeps a short list of such finished
// operations and the next thread that adds an operation releases them: the memory goes back
// to the cache of the thread that allocates the next operation, and no lock is shared.
//
// What may run on the adding thread then is only the library's own code: the operation let
// its blocks go when it finished (on the pool thread, as before), and anything user code
// attached to it later through `operations` (a completion block, observers, dependencies)
// is released on the pool by `deinit` (see `SQOperation.releasedByAddingThread`).
//
// The list holds at most `retiredLimit` operations. The finishing pool thread that fills it
// takes the whole list and frees it there, in one go: when nobody adds (a queue draining a
// burst), two pool threads freeing operation by operation into the adding thread's arena
// fight over that arena's lock (with 2 workers, draining 200k operations cost twice what it
// cost with one), while a batch keeps that lock with one thread at a time. A queue that
// empties frees its list at once, before it wakes its waiters: no operation outlives
// `waitUntilAllOperationsAreFinished` because of it.

extension SQOperationQueue.LockedState {
    /// How many finished operations at most wait for an adding thread.
    static let retiredLimit = 64

    /// Keeps the queue's reference to `operation`, which has just finished, for the next
    /// adding thread to release. False if the caller must release it now (not a queue-made
    /// operation). If the list is full, moves it (with `operation`) into `overflow`, for the
    /// caller to release once the lock is dropped.
    mutating func retire(_ operation: SQOperation, overflow: inout Unmanaged<SQOperation>?) -> Bool {
        guard operation.isQueueMade else { return false }
        operation.dispatchNext = retired
        retired = Unmanaged.passUnretained(operation)
        retiredCount += 1
        if retiredCount >= Self.retiredLimit {
            overflow = takeRetired()
        }
        return true
    }

    /// Empties the list; the caller releases what it returns with
    /// ``SQOperationQueue/releaseRetired(_:onAddingThread:)`` once the lock is dropped.
    mutating func takeRetired() -> Unmanaged<SQOperation>? {
        guard let list = retired else { return nil }
        retired = nil
        retiredCount = 0
        return list
    }
}

extension SQOperationQueue {
    /// Releases the queue's references to a list taken by `takeRetired`. Called with no lock
    /// held.
    internal static func releaseRetired(
        _ list: Unmanaged<SQOperation>?, onAddingThread: Bool
    ) {
        var cursor = list
        while let link = cursor {
            // safety: the list holds the queue's reference to each operation until the
            // release below; the links were written under the queue lock, which the caller
            // took after them.
            cursor = link._withUnsafeGuaranteedRef { operation in
                let next = operation.dispatchNext
                operation.dispatchNext = nil
                if onAddingThread {
                    operation.releasedByAddingThread = true
                }
                return next
            }
            link.release()
        }
    }
}

/// What an operation freed on an adding thread still held of user code, released on the
/// pool instead (see `SQOperationQueue+Retired.swift`).
private final class SQOperationLeftovers {
    var extras: SQOperationExtras?
    var completion: (@Sendable () -> Void)?
    var dependencies: SQOperationList

    init(
        extras: SQOperationExtras?, completion: (@Sendable () -> Void)?,
        dependencies: SQOperationList
    ) {
        self.extras = extras
        self.completion = completion
        self.dependencies = dependencies
    }
}

private let sqReleaseLeftovers: cq_function_t = { context in
    // safety: retained once by releaseLeftoversOnPool for this submission.
    Unmanaged<SQOperationLeftovers>.fromOpaque(context.unsafelyUnwrapped).release()
}

extension SQOperation {
    /// From `deinit` on an adding thread: moves what user code attached to the operation to
    /// a pool thread to release there. Usually there is nothing.
    internal func releaseLeftoversOnPool() {
        // Only the submission's reference: a strong local released after the submission
        // could be the last one, if the pool thread released its own first.
        let leftovers: Unmanaged<SQOperationLeftovers>? = state.withLock { state in
            guard state.extras != nil || state.completionBlock != nil
                || !state.dependencies.isEmpty
            else { return nil }
            defer {
                state.extras = nil
                state.completionBlock = nil
            }
            return Unmanaged.passRetained(
                SQOperationLeftovers(
                    extras: state.extras, completion: state.completionBlock,
                    dependencies: state.dependencies.take()))
        }
        guard let leftovers else { return }
        cq_async_f(
            cq_get_global_queue(SQQueue.Priority.default.cValue, 0), leftovers.toOpaque(),
            sqReleaseLeftovers)
    }
}
