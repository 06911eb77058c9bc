import Synchronization

extension SQOperationQueue {
    /// The progress of a queue's work, in operations (``SQOperationQueue/progress``): set
    /// ``totalUnitCount`` to the number of operations you are about to add; each operation
    /// (barriers excepted) that finishes while ``totalUnitCount`` is above 0 adds one to
    /// ``completedUnitCount``, except, as Foundation documents, an operation whose override of
    /// ``SQOperation/start()`` does not call `super.start()`.
    ///
    /// The library does not import Foundation, so this is a small value of its own rather
    /// than a Foundation `Progress`; it has the members a queue's progress is used for.
    ///
    /// Thread-safety: every member may be used from any thread; reads and writes are atomic
    /// (relaxed: each count is exact, the pair is not a snapshot). Foundation: `Progress`, as
    /// returned by `OperationQueue.progress`.
    public final class Progress: Sendable {
        private let total = Atomic<Int64>(0)
        private let completed = Atomic<Int64>(0)

        internal init() {}

        /// The number of operations the work consists of; 0 (the default) stops counting.
        /// Foundation: `Progress.totalUnitCount`.
        public var totalUnitCount: Int64 {
            get { total.load(ordering: .relaxed) }
            set { total.store(newValue, ordering: .relaxed) }
        }

        /// The operations finished so far (it can be reset). Foundation:
        /// `Progress.completedUnitCount`.
        public var completedUnitCount: Int64 {
            get { completed.load(ordering: .relaxed) }
            set { completed.store(newValue, ordering: .relaxed) }
        }

        /// `completedUnitCount / totalUnitCount`, or 0 without a total.
        /// Foundation: `Progress.fractionCompleted`.
        public var fractionCompleted: Double {
            let total = totalUnitCount
            return total > 0 ? Double(completedUnitCount) / Double(total) : 0
        }

        /// Whether there is a total and the count has reached it.
        /// Foundation: `Progress.isFinished`.
        public var isFinished: Bool {
            let total = totalUnitCount
            return total > 0 && completedUnitCount >= total
        }

        internal func operationFinished() {
            if total.load(ordering: .relaxed) > 0 {
                completed.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }
}
