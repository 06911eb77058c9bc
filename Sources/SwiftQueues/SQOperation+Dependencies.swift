extension SQOperation {
    /// The default ``addDependency(_:)``: one edge, counted in this operation and registered
    /// with `operation`, which releases it when it finishes.
    internal func addDependencyDefault(_ operation: SQOperation) {
        var deliverer: SQOperationObservers<StateChange>?
        let counted = state.withLock { state in
            if !state.insertDependency(operation) {
                return false
            }
            mayHaveDependencies = true
            guard state.phase == .pending else {
                return false
            }
            state.unfinished += 1
            if !state.cancelled {
                setFlag(SQOperationFlags.baseReady, false)
                if state.reportedReady {
                    state.reportedReady = false
                    state.publish(.notReady, to: &deliverer)
                }
            }
            return true
        }
        deliverer?.deliver()
        guard counted else { return }
        // The edge is released exactly once: by `operation` finishing (it empties its
        // dependents under its lock), by removeDependency (if it finds the edge there first),
        // or here if `operation` has already finished.
        let alreadyFinished = operation.state.withLock { dependency in
            if dependency.phase == .finished {
                return true
            }
            dependency.dependents.append(SQDependentReference(self))
            return false
        }
        if alreadyFinished {
            dependencyReleased()
        }
    }

    /// The default ``removeDependency(_:)``.
    internal func removeDependencyDefault(_ operation: SQOperation) {
        let removed: SQOperation? = state.withLock { state in
            guard let removed = state.dependencies.remove(operation) else { return nil }
            state.extras?.dependencyIdentities?.remove(ObjectIdentifier(operation))
            return removed
        }
        guard removed != nil else { return }
        // Whoever takes the edge out of the dependency's list releases it: the dependency
        // finishing, or this call.
        let owned = operation.state.withLock { $0.dependents.remove(self) }
        if owned != nil {
            dependencyReleased()
        }
    }

    /// One dependency edge is released (the dependency finished, or was removed). When the last
    /// one goes, the operation becomes ready and its queue, if any, is told.
    internal func dependencyReleased() {
        var handOff = SQOperationHandOff.none
        dependencyReleased(handOff: &handOff)
    }

    /// As ``dependencyReleased()``, from a finish path that may take a hand-off.
    internal func dependencyReleased(handOff: inout SQOperationHandOff) {
        var deliverer: SQOperationObservers<StateChange>?
        var queue: SQOperationQueue?
        let ready = state.withLock { state in
            state.unfinished -= 1
            guard state.unfinished == 0, state.phase == .pending, !state.cancelled else {
                return false
            }
            // Pairs with the acquire load of isReady.
            setFlag(SQOperationFlags.baseReady, true)
            // Pairs with the acquire load on the queue's start path (see readySequence).
            readySequence.wrappingAdd(1, ordering: .acquiringAndReleasing)
            if !state.reportedReady {
                state.reportedReady = true
                state.publish(.ready, to: &deliverer)
            }
            queue = state.queueReference()
            return true
        }
        if let deliverer {
            handOff.submitTaken()
            deliverer.deliver()
        }
        if ready {
            queue?.operationBecameReady(self, handOff: &handOff)
        }
    }
}

extension SQOperation.LockedState {
    /// Appends `operation` to the dependencies unless it is one already; returns whether it
    /// was appended. O(1): small lists are searched, larger ones keep a set of identities.
    mutating func insertDependency(_ operation: SQOperation) -> Bool {
        let identity = ObjectIdentifier(operation)
        if let extras, extras.dependencyIdentities != nil {
            if !extras.dependencyIdentities!.insert(identity).inserted {
                return false
            }
        } else {
            if dependencies.contains(operation) {
                return false
            }
            if dependencies.count >= 8 {
                var identities = Set(dependencies.elements.map(ObjectIdentifier.init))
                identities.insert(identity)
                makeExtras().dependencyIdentities = identities
            }
        }
        dependencies.append(operation)
        return true
    }
}
