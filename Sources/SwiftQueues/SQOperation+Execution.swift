extension SQOperation {
    /// The default ``start()``: checks, then runs ``main(finish:)`` (or finishes a cancelled
    /// operation at once).
    internal func startDefault() {
        let onStartPath = SQOperationContext.isStarting(self)
        // Virtual calls happen before the lock: an override may take it itself.
        let ready = onStartPath || isReady
        var deliverer: SQOperationObservers<StateChange>?
        var byQueue = onStartPath
        let outcome: StartOutcome = state.withLock { state in
            switch state.phase {
            case .executing: return .misuse("is already executing")
            case .finished: return .misuse("has already finished")
            case .pending: break
            }
            if !byQueue && state.queue != nil {
                guard state.startCalledByQueue else {
                    return .misuse("is in a queue; the queue starts it")
                }
                // An override's super.start(), after the queue called start(): the queue
                // checked readiness before it did.
                byQueue = true
            }
            if !ready && !byQueue {
                return .misuse(
                    "is not ready (\(state.unfinished) unfinished dependencies); "
                        + "start only a ready operation")
            }
            if state.cancelled {
                setFlag(SQOperationFlags.defaultStarted, true)
                return .finishCancelled
            }
            state.phase = .executing
            setFlag(SQOperationFlags.executing | SQOperationFlags.defaultStarted, true)
            if !state.reportedExecuting {
                state.reportedExecuting = true
                state.publish(.executing, to: &deliverer)
            }
            return .run
        }
        deliverer?.deliver()
        switch outcome {
        case .run:
            SQRuntime.probeOperationState(self, .executing)
            if onStartPath {
                runMain()
            } else if byQueue {
                // On a thread of the override's choosing: it runs as the queue's start path
                // would (SQOperationQueue.current names the queue in main and the completion
                // block).
                SQOperationContext.run(Unmanaged.passUnretained(self)) { _ in runMain() }
            } else {
                SQOperationContext.runStartedByHand(self) { runMain() }
            }
        case .finishCancelled:
            SQOperationContext.finishAsLastStep(self)
        case .misuse(let problem):
            sqOperationMisuse("SQOperation.start(): \(self) \(problem)")
        }
    }

    /// The default start's call of ``main(finish:)``.
    private func runMain() {
        if type(of: self) == SQBlockOperation.self {
            // A plain block operation: nothing overrides main(finish:), whose default this
            // is, written out without the Finisher's reference.
            main()
            SQOperationContext.finishAsLastStep(self)
        } else {
            main(finish: Finisher(self))
        }
    }

    private enum StartOutcome {
        case run
        case finishCancelled
        case misuse(String)
    }

    /// Finishes the operation, once: marks it finished, tells the observers, runs the
    /// completion block, releases the dependents, lets the queue go on, wakes the waiters.
    /// Later calls return at once. Called with no lock held.
    internal func finishOperation() {
        var handOff = SQOperationHandOff.none
        finishOperation(handOff: &handOff)
    }

    /// As ``finishOperation()``; `handOff` may take the next operation to start (see
    /// ``SQOperationContext``).
    internal func finishOperation(handOff: inout SQOperationHandOff) {
        var deliverer: SQOperationObservers<StateChange>?
        var dependents = SQOperationList()
        var completion: (@Sendable () -> Void)?
        var queue: Unmanaged<SQOperationQueue>?
        var blocks: (first: (@Sendable () -> Void)?, others: [@Sendable () -> Void])?
        let first = state.withLock { state in
            if state.phase == .finished {
                return false
            }
            state.phase = .finished
            if isQueueMade {
                // safety: only SQOperationQueue makes such operations, all SQBlockOperation.
                blocks = unsafeDowncast(self, to: SQBlockOperation.self).takeBlocks()
            }
            // Pairs with the acquire loads of isFinished and of the queue's start path.
            let old = flags.load(ordering: .relaxed)
            flags.store(
                (old | SQOperationFlags.finished) & ~SQOperationFlags.executing,
                ordering: .releasing)
            // Strong references to the dependents, taken under the lock: one that is going
            // away (deinitializing) takes itself out of the list, and is skipped here.
            if !state.dependents.isEmpty {
                for dependent in state.dependents.take().elementsForRelease {
                    if let operation = dependent.retainedUnlessDeinitializing() {
                        dependents.append(operation)
                    }
                }
            }
            swap(&completion, &state.completionBlock)
            // From here on the operation no longer names its queue in its locked state; this
            // thread, if it is the operation's start path, names it in its context until the
            // queue lets go (operationFinished): no second lock for that.
            queue = state.queue
            state.queue = nil
            state.publish(.finished, to: &deliverer)
            return true
        }
        guard first else { return }
        // A queue-made operation lets its blocks go here, on this thread (see
        // SQOperationQueue+Retired.swift).
        _ = blocks.take()
        SQRuntime.probeOperationState(self, .finished)
        if queue != nil {
            if handOff.finishing == nil, let context = SQOperationContext.current,
                context.pointee.operation === self
            {
                handOff.finishing = context
            }
            handOff.finishing?.pointee.finishingQueue = queue
        }
        if deliverer != nil || completion != nil {
            let onStartPath = handOff.finishing != nil
            SQOperationContext.runFinishing(self, of: queue, onStartPath: onStartPath) {
                if let deliverer {
                    // Observers of `.finished` run where the completion block does, and
                    // waiting for the operation from them returns at once as from that block:
                    // the operation is finished, and the rest of its finish runs on this
                    // thread after them (waiting there stopped with a message about waiting
                    // from inside start(), or hung).
                    SQOperationContext.runCompletion({ deliverer.deliver() }, of: self)
                }
                if let completion {
                    SQOperationContext.runCompletion(completion, of: self)
                }
            }
        }
        completion = nil
        if !dependents.isEmpty {
            for dependent in dependents.elementsForRelease {
                dependent.dependencyReleased(handOff: &handOff)
            }
            dependents = SQOperationList()
        }
        // safety: the operation is still in the queue, and a queue that holds operations
        // keeps itself alive; after this call the queue may be gone.
        if let queue {
            queue._withUnsafeGuaranteedRef { $0.operationFinished(self, handOff: &handOff) }
        }
        // One read-modify-write on the word a waiter also modifies: either the waiter sees
        // `released` (and does not wait), or this sees `hasWaiters` (and wakes it, after the
        // waiter's locked registration).
        let waitState = waitState.bitwiseOr(
            SQOperationFlags.released, ordering: .sequentiallyConsistent
        ).oldValue
        guard waitState & SQOperationFlags.hasWaiters != 0 else { return }
        var waiters: [SQSemaphore] = []
        var continuations: [CheckedContinuation<Void, Never>] = []
        state.withLock { state in
            guard let extras = state.extras else { return }
            swap(&waiters, &extras.waiters)
            swap(&continuations, &extras.continuations)
        }
        for waiter in waiters {
            waiter.signal()
        }
        for continuation in continuations {
            continuation.resume()
        }
    }

    /// Reports `executing` to the observers if it has not been reported (for operations that
    /// manage their own executing state and announce it with `didChangeValue`).
    internal func reportExecuting() {
        var deliverer: SQOperationObservers<StateChange>?
        state.withLock { state in
            if !state.reportedExecuting && state.phase != .finished {
                state.reportedExecuting = true
                state.publish(.executing, to: &deliverer)
            }
        }
        deliverer?.deliver()
    }
}
