extension SQOperation {
    /// What an asynchronous operation calls when its work is done: the argument of
    /// ``SQOperation/main(finish:)``. Call it as a function, `finish()`, from any thread.
    ///
    /// The first call finishes the operation (it runs the completion block, releases the
    /// dependents and the queue slot, and wakes the waiters, on the calling thread); later
    /// calls do nothing. It holds a strong reference to the operation.
    ///
    /// A value type; thread-safe. Not in Foundation.
    public struct Finisher: Sendable {
        internal let operation: SQOperation

        internal init(_ operation: SQOperation) {
            self.operation = operation
        }

        /// Finishes the operation (once).
        ///
        /// Thread-safe; never blocks unless the completion block or an observer does.
        public func callAsFunction() {
            operation.finishOperation()
        }
    }
}
