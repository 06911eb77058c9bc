import CQueueCore

/// What the runtime's objects have in common, as Dispatch's `DispatchObject` is the common
/// base of its queues, sources, groups and semaphores: code typed against that base
/// (`[DispatchObject]`, to suspend a mix of queues and sources) ports with the rename.
///
/// Conforming types: ``SQQueue``, ``SQSource``, ``SQGroup``, ``SQSemaphore``. As in the C core
/// (docs/misuse.md), suspending or resuming a group or a semaphore stops the process with a
/// message (libdispatch ignores it), and activating one does nothing (it is never inactive);
/// their target queue is only the queue their finalizer would run on, as in libdispatch.
/// ``SQIO`` is not one: its handlers' queue is chosen when it is created.
///
/// Thread-safety: every member may be called from any thread. Dispatch: `DispatchObject`.
public protocol SQObject: AnyObject, Sendable {
    /// Starts an object created inactive. Does nothing on an active one.
    /// Dispatch: `DispatchObject.activate()`.
    func activate()
    /// Stops the object from starting new work (counted). Dispatch: `DispatchObject.suspend()`.
    func suspend()
    /// Undoes one ``suspend()``. Dispatch: `DispatchObject.resume()`.
    func resume()
    /// The queue the object's work runs on (`nil`: the default-priority global queue).
    /// Dispatch: `DispatchObject.setTarget(queue:)`.
    func setTarget(queue: SQQueue?)
}

extension SQQueue: SQObject {}

extension SQSource: SQObject {
    /// Makes the source's handlers run on `queue` (`nil`: the default-priority global queue),
    /// from the next event on. Thread-safe; never blocks. Dispatch:
    /// `DispatchObject.setTarget(queue:)` (inherited by `DispatchSource`).
    public func setTarget(queue: SQQueue?) {
        cq_set_target_queue(sqObject(object), queue?.handle)
    }
}

extension SQGroup: SQObject {
    /// Does nothing: a group is never inactive. See ``SQObject``.
    public func activate() {
        cq_activate(sqObject(handle))
    }

    /// Stops the process with a message: a group cannot be suspended. See ``SQObject``.
    public func suspend() {
        cq_suspend(sqObject(handle))
    }

    /// Stops the process with a message: a group cannot be resumed. See ``SQObject``.
    public func resume() {
        cq_resume(sqObject(handle))
    }

    /// The queue the group's finalizer would run on, as in libdispatch. See ``SQObject``.
    public func setTarget(queue: SQQueue?) {
        cq_set_target_queue(sqObject(handle), queue?.handle)
    }
}

extension SQSemaphore: SQObject {
    /// Does nothing: a semaphore is never inactive. See ``SQObject``.
    public func activate() {
        cq_activate(sqObject(handle))
    }

    /// Stops the process with a message: a semaphore cannot be suspended. See ``SQObject``.
    public func suspend() {
        cq_suspend(sqObject(handle))
    }

    /// Stops the process with a message: a semaphore cannot be resumed. See ``SQObject``.
    public func resume() {
        cq_resume(sqObject(handle))
    }

    /// The queue the semaphore's finalizer would run on, as in libdispatch. See ``SQObject``.
    public func setTarget(queue: SQQueue?) {
        cq_set_target_queue(sqObject(handle), queue?.handle)
    }
}
