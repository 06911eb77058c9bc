import CQueueCore

extension SQOperationQueue {
    /// The body of ``waitUntilAllOperationsAreFinished()``.
    internal func waitUntilEmpty() {
        if SQOperationContext.currentOperationQueue() === self {
            // A completion block runs while its operation is still in the queue.
            let caller =
                SQOperationContext.operationRunningCompletion() != nil
                ? "the completion block of an operation" : "an operation"
            sqOperationMisuse(
                "SQOperationQueue.waitUntilAllOperationsAreFinished(): called from \(caller) "
                    + "of \(self), which cannot finish while it waits; that would wait for ever")
        }
        if cq_thread_is_main() && self === SQOperationQueue.main {
            refuseWaitOnTheMainThread()
        }
        if state.withLock({ $0.count == 0 }) {
            return
        }
        let semaphore = SQSemaphore(value: 0)
        let mustWait = state.withLock { state in
            if state.count == 0 {
                return false
            }
            state.idleWaiters.append(semaphore)
            return true
        }
        if mustWait {
            semaphore.wait()
        }
    }

    /// The main queue's operations start on the main thread: a wait there for one that has not
    /// started can never end (it hung with no word, as Foundation's does). Stops with a message.
    /// (An operation that has started, an asynchronous one finishing elsewhere, may end.)
    private func refuseWaitOnTheMainThread() {
        // The operation locks inside the queue lock: the order the locks allow.
        let notStarted = state.withLock { state in
            state.snapshot().contains { operation in
                operation.state.withLock { $0.phase == .pending }
            }
        }
        if notStarted {
            sqOperationMisuse(
                "SQOperationQueue.waitUntilAllOperationsAreFinished(): called on the main thread "
                    + "while SQOperationQueue.main holds operations that have not started; they "
                    + "start on the main thread, which this wait blocks: it would wait for ever "
                    + "(await untilAllOperationsAreFinished instead)")
        }
    }

    /// Waits, without blocking a thread, until the queue holds no operation (as
    /// ``waitUntilAllOperationsAreFinished()`` does): `await queue.untilAllOperationsAreFinished`.
    /// Returns at once if it is empty.
    ///
    /// Thread-safe. Not in Foundation.
    public var untilAllOperationsAreFinished: Void {
        get async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.count == 0 {
                        return true
                    }
                    state.idleContinuations.append(continuation)
                    return false
                }
                if now {
                    continuation.resume()
                }
            }
        }
    }
}
