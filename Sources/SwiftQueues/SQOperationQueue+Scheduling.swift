import CQueueCore

extension SQOperationQueue {
    /// Adds an operation (``addOperation(_:)`` and friends).
    internal func enqueue(_ operation: SQOperation) {
        // Overridden state properties are read outside every lock (they are user code).
        if operation.isExecuting || operation.isFinished {
            sqOperationMisuse(
                "SQOperationQueue.addOperation(_:): \(operation) has already "
                    + (operation.isFinished ? "finished" : "started")
                    + "; add an operation before it starts")
        }
        // Claim the operation first (the operation lock is not held under the queue lock
        // here, to keep the queue lock's sections short). If it becomes ready before it is
        // linked below, operationBecameReady records that in its queue state; if it finishes
        // before then, operationFinished does (and admitClaimed removes it again).
        var operationQoS: SQQoS.QoSClass?
        let check: (ready: Bool, misuse: String?) = operation.state.withLock { op in
            if let queue = op.queue {
                return (
                    false,
                    queue.toOpaque() == Unmanaged.passUnretained(self).toOpaque()
                        ? "is already in this queue" : "is already in another queue"
                )
            }
            switch op.phase {
            case .executing: return (false, "has already started")
            case .finished: return (false, "has already finished")
            case .pending: break
            }
            op.queue = Unmanaged.passUnretained(self)
            operationQoS = op.extras?.qualityOfService
            return (op.cancelled || op.unfinished == 0, nil)
        }
        if let misuse = check.misuse {
            sqOperationMisuse("SQOperationQueue.addOperation(_:): \(operation) \(misuse)")
        }
        admitClaimed(operation, ready: check.ready, operationQoS: operationQoS)
    }

    /// Adds an operation the queue created for itself, already claimed (see
    /// ``SQOperation/init(claimedBy:)``): pending, not cancelled, with no dependency and no
    /// quality of service of its own, and seen by no other thread yet.
    internal func enqueueClaimed(_ operation: SQOperation) {
        admitClaimed(operation, ready: true, operationQoS: nil)
    }

    /// Links a claimed operation into the queue and starts it, lists it or holds it back.
    private func admitClaimed(
        _ operation: SQOperation, ready: Bool, operationQoS: SQQoS.QoSClass?
    ) {
        var startable: Unmanaged<SQOperation>?
        var deliverer: SQOperationObservers<StateChange>?
        var retired: Unmanaged<SQOperation>?
        var finishedWhileAdding = false
        state.withLock { state in
            retired = state.takeRetired()
            let slot = operation.queueState
            let ready = ready || slot == .readyWhileAdding
            let qos = operationQoS ?? state.qualityOfService
            operation.owningQueue = Unmanaged.passUnretained(self)
            operation.queueQoS = qos
            // The C handle of the global queue, not its Swift object: no reference counting
            // on an object every adding thread shares.
            operation.queueTarget =
                state.underlying?.handle ?? cq_get_global_queue(qos.priority.cValue, 0)
            operation.queueSequence = state.nextSequence
            state.nextSequence += 1
            // The queue's reference to the operation, given back in operationFinished; and,
            // for the first operation, the queue's reference to itself (a queue that holds
            // operations stays alive), given back when it empties.
            _ = Unmanaged.passRetained(operation)
            let before = state.count
            if before == 0 {
                _ = Unmanaged.passRetained(self)
            }
            state.link(operation)
            state.publish(.added(operation), to: &deliverer)
            if slot == .finishedWhileAdding {
                // Another thread finished the operation between the claim and here (an
                // asynchronous operation whose cancel() finishes it at once, cancelled during
                // the add), and its operationFinished found it not linked yet. That finish used
                // to be dropped: the finished operation was linked and given a slot, its start
                // path saw it finished and returned, and it stayed in `operations` for ever,
                // holding its slot (`waitUntilAllOperationsAreFinished` hung; with one slot,
                // nothing ran again). It is linked like any other (observers see it added, the
                // barrier bookkeeping counts it) and removed below, after the lock, by the
                // same operationFinished as any finished operation; it never takes a slot.
                // (Only an operation added with addOperation gets here: one the queue made
                // for itself, a barrier among them, is seen by no other thread before this.)
                finishedWhileAdding = true
                if !state.barriers.isEmpty {
                    state.barriers.hold(operation)
                }
            } else if operation.isQueueBarrier {
                if state.barriers.add(operation, sequence: operation.queueSequence, queued: before) {
                    state.ready.append(operation)
                    startable = state.takeStartable()
                } else {
                    operation.queueState = .gated
                }
            } else if !state.barriers.isEmpty {
                state.barriers.hold(operation)
                operation.queueState = .gated
            } else if !ready {
                operation.queueState = .waiting
            } else if state.canStartAtOnce() {
                var tail: Unmanaged<SQOperation>?
                state.take(Unmanaged.passUnretained(operation), into: &startable, tail: &tail)
            } else {
                state.ready.append(operation)
                startable = state.takeStartable()
            }
        }
        submit(startable)
        deliverer?.deliver()
        SQOperationQueue.releaseRetired(retired, onAddingThread: true)
        if finishedWhileAdding {
            // The queue's part of that finish: remove it, wake the waiters if the queue
            // emptied, open barriers. (The caller holds the queue.)
            var handOff = SQOperationHandOff.none
            operationFinished(operation, handOff: &handOff)
        }
    }

    /// An operation of this queue became ready (its last dependency finished or was removed,
    /// it was cancelled, or it announced readiness): list it if it was waiting.
    internal func operationBecameReady(_ operation: SQOperation) {
        var handOff = SQOperationHandOff.none
        operationBecameReady(operation, handOff: &handOff)
    }

    /// As ``operationBecameReady(_:)``, from a finish path that may take a hand-off.
    internal func operationBecameReady(
        _ operation: SQOperation, handOff: inout SQOperationHandOff
    ) {
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            if operation.queueState == .none {
                // Claimed by enqueue but not linked yet: it reads this when it links.
                operation.queueState = .readyWhileAdding
                return nil
            }
            guard operation.queueState == .waiting else { return nil }
            if state.canStartAtOnce() {
                var head: Unmanaged<SQOperation>?
                var tail: Unmanaged<SQOperation>?
                state.take(Unmanaged.passUnretained(operation), into: &head, tail: &tail)
                return head
            }
            state.ready.append(operation)
            return state.takeStartable()
        }
        submit(startable, handOff: &handOff)
    }

    /// An operation of this queue finished: remove it, free its slot, open barriers, start
    /// what can start, wake the waiters if the queue is empty. The queue may be freed when
    /// this returns (if it emptied and nobody else holds it).
    internal func operationFinished(_ operation: SQOperation, handOff: inout SQOperationHandOff) {
        var deliverer: SQOperationObservers<StateChange>?
        var idleWaiters: [SQSemaphore] = []
        var idleContinuations: [CheckedContinuation<Void, Never>] = []
        var emptied = false
        var retired = false
        var released: Unmanaged<SQOperation>?
        var removed = false
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            switch operation.queueState {
            case .listed:
                state.ready.remove(operation)
            case .dispatched:
                state.running -= 1
            case .none, .readyWhileAdding:
                // Claimed by enqueue but not linked yet: the queue holds neither the
                // operation nor a reference to it. admitClaimed reads this when it links it,
                // and removes it then, through this function.
                operation.queueState = .finishedWhileAdding
                return nil
            case .removed:
                return nil
            case .waiting, .gated, .finishedWhileAdding:
                break
            }
            removed = true
            operation.queueState = .removed
            // Under the lock: once it is dropped, another finish may empty the queue and free
            // it (a queue holds itself only while it holds operations).
            // Pairs with the release store of the flag in startDefault (under the operation
            // lock, which the finishing thread took after it).
            if !operation.isQueueBarrier
                && operation.flags.load(ordering: .acquiring) & SQOperationFlags.defaultStarted != 0
            {
                progress.operationFinished()
            }
            state.unlink(operation)
            state.operationRemoved(operation)
            state.publish(.finished(operation), to: &deliverer)
            retired = state.retire(operation, overflow: &released)
            if state.count == 0 {
                emptied = true
                // Nobody may add again soon: free the retired operations here.
                if released == nil {
                    released = state.takeRetired()
                }
                swap(&idleWaiters, &state.idleWaiters)
                swap(&idleContinuations, &state.idleContinuations)
            }
            return state.takeStartable()
        }
        // From here on the operation no longer names its queue (its finish took it out of the
        // locked state; the finishing start path named it in its context until now, while the
        // queue is certainly alive).
        handOff.finishing?.pointee.finishingQueue = nil
        guard removed else {
            // Nothing to give back: the queue took no reference and no slot for it (this used
            // to release the operation all the same, a reference the queue did not hold).
            return
        }
        // Nothing below reads the queue: it may be gone already (see above), except when it
        // emptied here (its reference to itself is given back last).
        submit(startable, handOff: &handOff)
        // The queue's reference, taken in enqueue (the caller holds its own), unless the
        // queue retired the operation.
        if !retired {
            Unmanaged.passUnretained(operation).release()
        }
        SQOperationQueue.releaseRetired(released, onAddingThread: false)
        if let deliverer {
            handOff.submitTaken()
            // As the operation's own observers (finishOperation): waiting for it from here
            // returns at once.
            SQOperationContext.runCompletion({ deliverer.deliver() }, of: operation)
        }
        for waiter in idleWaiters {
            waiter.signal()
        }
        for continuation in idleContinuations {
            continuation.resume()
        }
        if emptied {
            // The queue's reference to itself, taken when it stopped being empty. Last.
            Unmanaged.passUnretained(self).release()
        }
    }

    /// The start path found `operation` not ready (an overridden ``SQOperation/isReady``, or
    /// a dependency added after it was listed): give its slot back and wait to be told it is
    /// ready, unless something that may have made it ready happened since `seen` was read.
    internal func park(_ operation: SQOperation, seen: UInt32) {
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            guard operation.queueState == .dispatched else { return nil }
            state.running -= 1
            // Pairs with the increments made before operationBecameReady: an event after the
            // start path's load is seen here, or its operationBecameReady finds `waiting`.
            if operation.readySequence.load(ordering: .acquiring) != seen {
                state.ready.prepend(operation)
            } else {
                operation.queueState = .waiting
            }
            return state.takeStartable()
        }
        submit(startable)
    }

    /// The start path found the queue suspended: give the slot back and put the operation at
    /// the front of its ready list.
    internal func giveBack(_ operation: SQOperation) {
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            guard operation.queueState == .dispatched else { return nil }
            state.running -= 1
            state.ready.prepend(operation)
            return state.takeStartable()
        }
        submit(startable)
    }

    /// A listed operation's priority changed: move it to the back of its new list.
    internal func operationPriorityChanged(_ operation: SQOperation) {
        state.withLock { state in
            guard operation.queueState == .listed else { return }
            state.ready.remove(operation)
            state.ready.append(operation)
        }
    }

    /// Submits a chain made by `takeStartable` to the pool, each operation with the
    /// reference `takeStartable` took for it. Called with no lock held.
    internal func submit(_ chain: Unmanaged<SQOperation>?) {
        var handOff = SQOperationHandOff.none
        submit(chain, handOff: &handOff)
    }

    /// As ``submit(_:)``, letting `handOff` take one operation of its C queue instead.
    internal func submit(_ chain: Unmanaged<SQOperation>?, handOff: inout SQOperationHandOff) {
        var cursor = chain
        while let link = cursor {
            // Read before submitting: once submitted, the operation may be listed and
            // chained again by another thread.
            let (target, overcommits) = link._withUnsafeGuaranteedRef { operation in
                cursor = operation.dispatchNext
                operation.dispatchNext = nil
                return (operation.queueTarget.unsafelyUnwrapped, operation.queueOvercommits)
            }
            if handOff.take(link, target: target) {
                continue
            }
            if overcommits {
                cq_swift_async_overcommit_f(target, link.toOpaque(), sqStartQueuedOperation)
            } else {
                cq_async_f(target, link.toOpaque(), sqStartQueuedOperation)
            }
        }
    }

    internal func setMaxConcurrentOperationCount(_ count: Int) {
        if count < SQOperationQueue.defaultMaxConcurrentOperationCount {
            sqOperationMisuse(
                "SQOperationQueue.maxConcurrentOperationCount = \(count) on \(self): the count "
                    + "must be at least 0, or defaultMaxConcurrentOperationCount (-1)")
        }
        if self === SQOperationQueue.main {
            return  // one at a time, whatever is set (as in Foundation)
        }
        var deliverer: SQOperationObservers<StateChange>?
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            guard state.maxConcurrent != count else { return nil }
            state.maxConcurrent = count
            state.limit = count < 0 ? Int.max : count
            state.publish(.maxConcurrentOperationCountChanged(count), to: &deliverer)
            return state.takeStartable()
        }
        submit(startable)
        deliverer?.deliver()
    }

    internal func setSuspended(_ suspended: Bool) {
        var deliverer: SQOperationObservers<StateChange>?
        let startable: Unmanaged<SQOperation>? = state.withLock { state in
            guard state.suspended != suspended else { return nil }
            state.suspended = suspended
            suspendedFlag.store(suspended, ordering: .relaxed)
            state.publish(.suspensionChanged(isSuspended: suspended), to: &deliverer)
            return state.takeStartable()
        }
        submit(startable)
        deliverer?.deliver()
    }

    internal func setUnderlyingQueue(_ queue: SQQueue?) {
        let count: Int = state.withLock { state in
            if state.count == 0 {
                state.underlying = queue
            }
            return state.count
        }
        if count != 0 {
            sqOperationMisuse(
                "SQOperationQueue.underlyingQueue: \(self) holds \(count) operation(s); set the "
                    + "underlying queue only while the queue is empty")
        }
    }
}
