extension SQOperation {
    /// The default ``waitUntilFinished()``.
    internal func waitUntilFinishedDefault() {
        if waitState.load(ordering: .acquiring) & SQOperationFlags.released != 0
            || SQOperationContext.isRunningCompletion(of: self)
        {
            // Finished; or finishing, from its own completion block: Foundation returns then
            // too (the block runs once the operation is finished).
            return
        }
        if SQOperationContext.current?.pointee.operation === self {
            sqOperationMisuse(
                "SQOperation.waitUntilFinished(): \(self) waits for itself from inside its own "
                    + "start(); that would wait for ever")
        }
        if waitState.load(ordering: .acquiring) & SQOperationFlags.released != 0 {
            return
        }
        let semaphore = SQSemaphore(value: 0)
        // From a completion block: waiting for a dependent of its operation would wait for
        // ever (dependents are released after the block returns).
        if let finishing = SQOperationContext.operationRunningCompletion(),
            state.withLock({ state in
                finishing._withUnsafeGuaranteedRef { state.dependencies.contains($0) }
            })
        {
            sqOperationMisuse(
                "SQOperation.waitUntilFinished(): \(self) depends on "
                    + "\(finishing.takeUnretainedValue()), from whose completion block it is "
                    + "called; dependents start after that block returns, so this would wait "
                    + "for ever (start work from a completion block; don't wait for it)")
        }
        let mustWait = state.withLock { state in
            if !registerWaiter() {
                return false
            }
            state.makeExtras().waiters.append(semaphore)
            return true
        }
        if mustWait {
            semaphore.wait()
        }
    }

    /// Waits, without blocking a thread, until the operation has finished and its completion
    /// block has run: `await operation.untilFinished`. Returns at once if it has.
    ///
    /// Cancelling the waiting task does not end the wait (cancel the operation instead: it
    /// then finishes soon). Thread-safe. Not in Foundation.
    public var untilFinished: Void {
        get async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if !registerWaiter() {
                        return true
                    }
                    state.makeExtras().continuations.append(continuation)
                    return false
                }
                if now {
                    continuation.resume()
                }
            }
        }
    }
}

extension SQOperation {
    /// Announces a waiter; returns false if the operation has already released its waiters
    /// (then the caller must not wait). Call it under the operation lock, and register the
    /// waiter in the same locked section (see finishOperation).
    internal func registerWaiter() -> Bool {
        let old = waitState.bitwiseOr(
            SQOperationFlags.hasWaiters, ordering: .sequentiallyConsistent
        ).oldValue
        return old & SQOperationFlags.released == 0
    }
}
