import CQueueCore

extension SQSerialQueue: SerialExecutor {
    /// This queue as the executor of an actor:
    /// `nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }`.
    ///
    /// Thread-safe; never blocks.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Stops the process with a message naming the queue unless the caller runs on this queue:
    /// in a work item or job of it, of a queue that targets it, or inside a `sync` onto it (the
    /// C core's `cq_assert_queue`). The Swift runtime asks ``isIsolatingCurrentContext()``
    /// first when code claims to be isolated to an actor on this queue (`assumeIsolated`,
    /// `preconditionIsolated`) from outside a task that it saw start on it, such as a plain
    /// `queue.async` closure, and reports a failure with its own message (naming the actor);
    /// runtimes without that call come here.
    ///
    /// Reads only the calling thread's state: thread-safe, lock-free, never blocks.
    public func checkIsolated() {
        cq_assert_queue(handle)
    }

    /// Whether the caller runs on this queue (see ``checkIsolated()``), without stopping the
    /// process: the runtime asks this first and reports the failure itself.
    ///
    /// Reads only the calling thread's state: thread-safe, lock-free, never blocks.
    public func isIsolatingCurrentContext() -> Bool? {
        cq_queue_is_current(handle)
    }
}
