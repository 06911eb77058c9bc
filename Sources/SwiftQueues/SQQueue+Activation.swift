import CQueueCore

extension SQQueue {
    /// Activates a queue created with ``Attributes/initiallyInactive``: the work it accepted
    /// meanwhile starts to run, in submission order. Does nothing on a queue that is already
    /// active (also when two threads activate it at once). Unlike ``resume()``, it does not
    /// undo a ``suspend()``.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchObject.activate()`.
    public func activate() {
        cq_activate(sqObject(handle))
    }
}
