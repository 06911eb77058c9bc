import CQueueCore

extension SQOperation {
    /// The default ``waitUntilFinished()``.
    internal func waitUntilFinishedDefault() {
        let finishing = SQOperationContext.operationRunningCompletion()
        if waitState.load(ordering: .acquiring) & SQOperationFlags.released != 0
            || finishing?.toOpaque() == Unmanaged.passUnretained(self).toOpaque()
        {
            // Finished; or finishing, from its own completion block: Foundation returns then
            // too (the block runs once the operation is finished).
            return
        }
        if SQOperationContext.current?.pointee.operation === self
            || SQOperationContext.isStartedByHandHere(self)
        {
            sqOperationMisuse(
                "SQOperation.waitUntilFinished(): \(self) waits for itself from inside its own "
                    + "start(); that would wait for ever")
        }
        if cq_thread_is_main() {
            refuseWaitOnTheMainThread()
        }
        // From another operation's completion block: some waits could never end.
        if let finishing {
            checkWaitFromCompletionBlock(of: finishing)
        } else if let context = SQOperationContext.current, context.pointee.finishingQueue == nil {
            checkWaitFromOperation(context.pointee.operation)
        }
        let semaphore = SQSemaphore(value: 0)
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
    /// Cancelling the waiting task does not end the wait (cancel the operation instead: in a
    /// queue, it then finishes soon; in no queue, a cancelled operation finishes only when
    /// something calls its ``start()``, as in Foundation). Thread-safe. Not in Foundation.
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

extension SQOperation {
    /// Called by ``waitUntilFinished()`` on the main thread: an operation of
    /// ``SQOperationQueue/main`` that has not started starts on the main thread, which the wait
    /// would block for ever (it hung with no word, as Foundation's does). Stops with a message.
    fileprivate func refuseWaitOnTheMainThread() {
        let main = UInt(bitPattern: Unmanaged.passUnretained(SQOperationQueue.main).toOpaque())
        let waitsForMain = state.withLock { state in
            state.phase == .pending
                && state.queue.map { UInt(bitPattern: $0.toOpaque()) } == main
        }
        if waitsForMain {
            sqOperationMisuse(
                "SQOperation.waitUntilFinished(): \(self) waits to start in "
                    + "SQOperationQueue.main, whose operations start on the main thread, which "
                    + "this wait (on the main thread) blocks: it would wait for ever (await "
                    + "untilFinished instead)")
        }
    }

    /// Called by ``waitUntilFinished()`` on this operation from inside `running`, which its
    /// queue is running on this thread: stops the process if this operation waits to start in
    /// that same queue, of width 1, whose slot `running` holds until it returns (Foundation
    /// hangs there; `addOperations(_:waitUntilFinished: true)` from an operation of a serial
    /// queue is the usual way to meet it).
    fileprivate func checkWaitFromOperation(_ running: SQOperation) {
        guard let queue = SQOperationContext.currentOperationQueue(),
            queue.maxConcurrentOperationCount == 1
        else { return }
        let waitsThere = state.withLock { state in
            // Cancelled or not: a cancelled operation of a queue finishes only when the
            // queue starts it, in a slot like any other.
            state.phase == .pending
                && state.queue?.toOpaque() == Unmanaged.passUnretained(queue).toOpaque()
        }
        guard waitsThere else { return }
        sqOperationMisuse(
            "SQOperation.waitUntilFinished(): \(self) is waited for from inside \(running), which "
                + "holds the only slot of \(queue) (maxConcurrentOperationCount 1) while "
                + "\(self) waits there to start: this would wait for ever")
    }

    /// Called by ``waitUntilFinished()`` on this operation from the completion block of
    /// `finishing` (another operation): stops the process if the wait could never end. The
    /// completion block holds back `finishing`'s dependents and, in a queue, its slot: this
    /// operation cannot start while it depends on `finishing`, nor when both are in a queue of
    /// width 1 and this one has not started.
    fileprivate func checkWaitFromCompletionBlock(of finishing: Unmanaged<SQOperation>) {
        let (queue, pending) = state.withLock { state in
            (state.queueReference(), state.phase == .pending)
        }
        let problem: String
        if waitsThroughDependencies(for: finishing.takeUnretainedValue()) {
            problem =
                "depends on it, directly or through unfinished dependencies; dependents start "
                + "after that block returns"
        } else if let queue, pending,
            let context = SQOperationContext.current,
            context.pointee.operation === finishing.takeUnretainedValue(),
            context.pointee.finishingQueue?.takeUnretainedValue() === queue,
            queue.maxConcurrentOperationCount == 1
        {
            problem =
                "waits in the same queue of width 1, whose slot that operation holds until the "
                + "block returns"
        } else {
            return
        }
        sqOperationMisuse(
            "SQOperation.waitUntilFinished(): \(self) is waited for from the completion block of "
                + "\(finishing.takeUnretainedValue()), and \(problem): this would wait for ever "
                + "(start work from a completion block; don't wait for it)")
    }

    /// Whether this operation cannot start before `finishing` has: `finishing` is one of its
    /// dependencies, or a dependency of an unfinished one, and so on (a dependent of a
    /// dependent waited for from a completion block hung with no message). Walks the
    /// unfinished operations upstream of this one, each lock taken alone; only from a
    /// completion block that waits, so its cost (the size of that part of the graph) is paid
    /// only there.
    private func waitsThroughDependencies(for finishing: SQOperation) -> Bool {
        var seen = Set<ObjectIdentifier>([ObjectIdentifier(self)])
        var pending: [SQOperation] = [self]
        while let operation = pending.popLast() {
            for dependency in operation.state.withLock({ $0.dependencies.elements }) {
                if dependency === finishing {
                    return true
                }
                // A finished dependency holds nobody back.
                if !dependency.hasFinished && seen.insert(ObjectIdentifier(dependency)).inserted {
                    pending.append(dependency)
                }
            }
        }
        return false
    }
}
