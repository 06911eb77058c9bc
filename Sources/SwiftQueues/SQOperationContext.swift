#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the calling thread is doing for an ``SQOperationQueue``: the operation whose
/// ``SQOperation/start()`` the queue is running on it (held by the start path). Its queue is
/// found through the operation, under its lock, for as long as the queue holds it. Lives on
/// the stack of the queue's start path; a thread-specific pointer finds it. Written and read
/// only by its own thread. Not public API.
///
/// It also carries the *hand-off*: when a plain ``SQBlockOperation`` (not a subclass, so
/// nothing runs after its finish: no overridden `start()` could go on and wait) finishes as
/// the last thing its start path does, and its finish lets the next operation of the same C
/// queue start (the next one of a width-1 queue, the next link of a chain), the start path
/// runs that operation itself once the current one has returned, instead of submitting it
/// to the pool: no hand-over between threads, no wake-up. At most
/// ``SQOperationQueue/handOffBudget`` in a row.
internal struct SQOperationContext {
    unowned(unsafe) var operation: SQOperation
    /// The operation to start next (retained once, as a submission is).
    var handOff: Unmanaged<SQOperation>?
    /// Hand-offs left.
    var budget = SQOperationQueue.handOffBudget
    /// While `operation` finishes on this thread, from the step that takes its queue out of
    /// its locked state until the queue has let it go: that queue (alive until then), so that
    /// ``SQOperationQueue/current`` and the queue's waiting check still name it (from the
    /// completion block and the observers) without the finish taking the operation lock again.
    var finishingQueue: Unmanaged<SQOperationQueue>?

    /// A thread-specific key, created once and never deleted.
    private static func makeKey() -> pthread_key_t {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        sqRequire(status == 0, "SQOperationQueue: pthread_key_create failed (\(status))")
        return key
    }

    /// The thread-specific key of the context.
    private static let key = makeKey()

    /// The thread-specific key naming the operation whose completion block the calling thread
    /// runs.
    private static let completionKey = makeKey()

    /// The thread-specific key of the innermost ``ManualStart`` of the calling thread.
    private static let manualStartKey = makeKey()

    /// An operation whose ``SQOperation/start()`` the calling thread runs outside any queue
    /// (started by hand), linked to the one it runs inside, if any. On the stack of the start.
    private struct ManualStart {
        unowned(unsafe) let operation: SQOperation
        let outer: UnsafeMutableRawPointer?
    }

    /// Runs `body` (the default start's call of `main`) naming `operation` as started by hand
    /// on this thread, so that waiting for it from there stops with a message instead of
    /// waiting for ever (see ``isStartedByHandHere(_:)``).
    static func runStartedByHand(_ operation: SQOperation, _ body: () -> Void) {
        var node = ManualStart(operation: operation, outer: pthread_getspecific(manualStartKey))
        withUnsafeMutablePointer(to: &node) { node in
            _ = pthread_setspecific(manualStartKey, node)
            body()
            _ = pthread_setspecific(manualStartKey, node.pointee.outer)
        }
    }

    /// Whether the calling thread is inside `operation`'s start by hand (at any depth: an
    /// operation started by hand from another's `main`).
    static func isStartedByHandHere(_ operation: SQOperation) -> Bool {
        var cursor = pthread_getspecific(manualStartKey)
        while let node = cursor?.assumingMemoryBound(to: ManualStart.self) {
            if node.pointee.operation === operation {
                return true
            }
            cursor = node.pointee.outer
        }
        return false
    }

    /// Runs `operation`'s completion block, naming the operation as the one whose completion
    /// block this thread runs (see ``operationRunningCompletion()``): waiting for it there must
    /// return at once, its finish waits for the block.
    static func runCompletion(_ completion: () -> Void, of operation: SQOperation) {
        let previous = pthread_getspecific(completionKey)
        _ = pthread_setspecific(completionKey, Unmanaged.passUnretained(operation).toOpaque())
        completion()
        _ = pthread_setspecific(completionKey, previous)
    }

    /// Runs `body` (the completion block and observers of `operation`, which is finishing on
    /// this thread) where it names the operation's queue as the start path's finish does: an
    /// operation that finishes on a thread other than its start path (an asynchronous one,
    /// finished by its own code) gets a context of its own for the time of `body`, naming
    /// `queue` (which still holds it). Without it, ``SQOperationQueue/current`` was nil in
    /// such an operation's completion block, and waiting there for the queue, or for the next
    /// operation of a width-1 queue, hung instead of stopping with a message.
    static func runFinishing(
        _ operation: SQOperation, of queue: Unmanaged<SQOperationQueue>?, onStartPath: Bool,
        _ body: () -> Void
    ) {
        guard let queue, !onStartPath else {
            body()
            return
        }
        run(Unmanaged.passUnretained(operation)) { context in
            context.pointee.finishingQueue = queue
            body()
            context.pointee.finishingQueue = nil
        }
    }

    /// The operation whose completion block the calling thread runs, if any (unowned: alive
    /// while its block runs).
    static func operationRunningCompletion() -> Unmanaged<SQOperation>? {
        pthread_getspecific(completionKey).map { Unmanaged<SQOperation>.fromOpaque($0) }
    }

    /// The context of the calling thread, if a queue is starting or running an operation on it.
    static var current: UnsafeMutablePointer<SQOperationContext>? {
        pthread_getspecific(key)?.assumingMemoryBound(to: SQOperationContext.self)
    }

    /// The queue of the calling thread's operation while the queue holds it: the finishing
    /// queue, or the one named in the operation's locked state (a strong reference taken
    /// under the lock). Nil outside a start path.
    static func currentOperationQueue() -> SQOperationQueue? {
        guard let context = current else { return nil }
        if let queue = context.pointee.finishingQueue {
            // safety: this thread is finishing the operation, which its queue still holds.
            return queue.takeUnretainedValue()
        }
        return context.pointee.operation.state.withLock { $0.queueReference() }
    }

    /// Whether the calling thread is a queue's start path for `operation` (so that ``start()``
    /// knows the queue, not the user, calls it).
    static func isStarting(_ operation: SQOperation) -> Bool {
        current?.pointee.operation === operation
    }

    /// Runs `body` with the calling thread's context set (to `operation` first), then restores
    /// the previous one.
    static func run(
        _ operation: Unmanaged<SQOperation>,
        _ body: (UnsafeMutablePointer<SQOperationContext>) -> Void
    ) {
        var context = operation._withUnsafeGuaranteedRef { SQOperationContext(operation: $0) }
        let previous = pthread_getspecific(key)
        withUnsafeMutablePointer(to: &context) { context in
            _ = pthread_setspecific(key, context)
            body(context)
        }
        _ = pthread_setspecific(key, previous)
    }

    /// Finishes `operation` as the last step of its start path: if the calling thread is
    /// that start path, the finish may hand it the next operation (see above).
    static func finishAsLastStep(_ operation: SQOperation) {
        guard type(of: operation) == SQBlockOperation.self, let context = current,
            context.pointee.operation === operation, context.pointee.budget > 0,
            context.pointee.handOff == nil
        else {
            operation.finishOperation()
            return
        }
        var handOff = SQOperationHandOff(target: operation.queueTarget)
        handOff.finishing = context
        operation.finishOperation(handOff: &handOff)
        context.pointee.handOff = handOff.taken
    }
}
