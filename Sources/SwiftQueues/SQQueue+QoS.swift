import CQueueCore

extension SQQueue {
    /// The global concurrent queue of a QoS class's priority (see ``SQQoS`` for the mapping):
    /// `.userInteractive` and `.userInitiated` give the high-priority queue, `.default` and
    /// `.unspecified` the default one, `.utility` the low one, `.background` the background one
    /// (whose work runs on nice-19 threads). Otherwise as ``global(priority:)``.
    ///
    /// Returns a cached singleton; the C queue is immortal. Thread-safe; never blocks.
    /// Dispatch: `DispatchQueue.global(qos:)`.
    public static func global(qos: SQQoS.QoSClass = .default) -> SQQueue {
        global(priority: qos.priority)
    }
}
