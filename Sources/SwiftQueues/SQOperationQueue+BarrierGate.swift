extension SQOperationQueue {
    /// A barrier not yet finished (``SQOperationQueue/addBarrierBlock(_:)``): it may start
    /// when `before`, the operations added before it that have not yet been removed, reaches
    /// 0; the operations added after it (and before the next barrier) wait in `held` until
    /// it has been removed. Guarded by the queue lock.
    internal struct BarrierGate {
        unowned(unsafe) let barrier: SQOperation
        let sequence: UInt64
        var before: Int
        var held: [SQOperation] = []
    }
}
