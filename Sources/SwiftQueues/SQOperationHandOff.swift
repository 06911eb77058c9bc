import CQueueCore

/// Where a finishing operation's start path may take the next operation to start itself
/// (see ``SQOperationContext``): passed down explicitly through the library's own finish
/// path (dependents released, queue slot freed). Before user code runs on that path (state
/// observers), the operation taken goes to the pool (``submitTaken()``), so that a deferred
/// start can never be waited for, nor held back, by the thread deferring it.
/// Not public API.
internal struct SQOperationHandOff {
    /// The C queue the finishing operation ran on; only an operation submitted to the same
    /// queue may be taken. Nil: no hand-off.
    let target: OpaquePointer?
    /// The operation taken (with its submission's reference), if any. At most one.
    var taken: Unmanaged<SQOperation>?
    /// The context of the finishing operation's start path, when the finish runs on it: it
    /// names the operation's queue while the queue still holds the operation (see
    /// ``SQOperationContext/finishingQueue``). Set by the finish, cleared by the queue.
    var finishing: UnsafeMutablePointer<SQOperationContext>?

    init(target: OpaquePointer?) {
        self.target = target
    }

    /// No hand-off: every operation is submitted to the pool.
    static var none: SQOperationHandOff { SQOperationHandOff(target: nil) }

    /// Takes `link` if nothing was taken yet and it goes to the same C queue.
    mutating func take(_ link: Unmanaged<SQOperation>, target: OpaquePointer) -> Bool {
        guard taken == nil, let own = self.target, own == target else { return false }
        taken = link
        return true
    }

    /// User code (observers) is about to run on this thread, before the operation taken
    /// would start: it goes to the pool now. A taken operation waited for that code: an
    /// observer that took 300 ms held back the next operation of its queue, or a dependent
    /// in another queue, by as much, and one that waited for its queue to empty hung.
    mutating func submitTaken() {
        if let link = taken, let target {
            taken = nil
            cq_async_f(target, link.toOpaque(), sqStartQueuedOperation)
        }
    }
}
