import Synchronization

extension SQOperation {
    /// An operation that produces a value or a typed error: the guide's advice (an operation
    /// stores its outcome; nothing is thrown across threads) with a typed place to store it.
    ///
    /// Give the work as a closure, or subclass and override ``run()``:
    ///
    /// ```swift
    /// let parse = SQOperation.Returning { () throws(ParseError) -> Document in
    ///     try Document(parsing: data)
    /// }
    /// queue.addOperation(parse)
    /// parse.waitUntilFinished()
    /// switch parse.result {
    /// case .success(let document)?: show(document)
    /// case .failure(let error)?: report(error)
    /// case nil: break  // cancelled before it ran
    /// }
    /// ```
    ///
    /// ``result`` is `nil` until ``run()`` has returned or thrown, and stays `nil` if the
    /// operation was cancelled before it started. Everything else is ``SQOperation``'s.
    ///
    /// Thread-safety: as ``SQOperation``. Not in Foundation.
    open class Returning<Success: Sendable, Failure: Error>: SQOperation, @unchecked Sendable {
        private let body: (@Sendable () throws(Failure) -> Success)?
        private let outcome = SQMutex<Result<Success, Failure>?>(nil)

        /// An operation whose work is ``run()``, which a subclass overrides.
        public override init() {
            body = nil
            super.init()
        }

        /// An operation whose work is `body`.
        ///
        /// A convenience initializer: a designated one taking a closure with a typed error
        /// makes Swift 6.3 crash while compiling subclasses that use `Never` as the error type.
        public convenience init(_ body: @escaping @Sendable () throws(Failure) -> Success) {
            self.init(storing: body)
        }

        internal init(storing body: (@Sendable () throws(Failure) -> Success)?) {
            self.body = body
            super.init()
        }

        /// The work: returns the value or throws the typed error. The default calls the
        /// closure given to ``init(_:)`` (and stops the process with a message if there is
        /// none). Runs once, on the thread that starts the operation.
        open func run() throws(Failure) -> Success {
            guard let body else {
                sqOperationMisuse(
                    "SQOperation.Returning.run(): \(self) has no closure; pass one to init(_:) "
                        + "or override run()")
            }
            return try body()
        }

        /// Runs ``run()`` and stores its outcome in ``result``. Override ``run()`` instead.
        open override func main() {
            let result = Result { () throws(Failure) -> Success in try run() }
            outcome.withLock { $0 = result }
        }

        /// The outcome of ``run()``: `nil` until it has returned or thrown (and for ever if the
        /// operation was cancelled before it started).
        ///
        /// Thread-safe; takes a lock briefly.
        public final var result: Result<Success, Failure>? {
            outcome.withLock { $0 }
        }

        /// Waits (without blocking a thread) until the operation has finished, then returns
        /// ``result``: `await operation.finishedResult`. (A property that rethrew the typed
        /// error would make Swift 6.3 crash while compiling callers that use `Never` as the
        /// error type; `try await operation.finishedResult?.get()` does the same safely.)
        ///
        /// Thread-safe.
        public final var finishedResult: Result<Success, Failure>? {
            get async {
                await untilFinished
                return result
            }
        }
    }
}
