import Synchronization

/// A registration made by ``SQOperation/observeStateChanges(_:)`` or
/// ``SQOperationQueue/observeStateChanges(_:)``: the handler is called while this object is
/// alive and until ``invalidate()``.
///
/// Keep it for as long as you want the changes (as with Foundation's
/// `NSKeyValueObservation`, dropping it ends the observation).
///
/// Thread-safety: every method may be called from any thread. Not in Foundation (which offers
/// `NSKeyValueObservation`, not available for operations on Linux).
public final class SQOperationObservation: Sendable {
    private let cancellation: SQMutex<(@Sendable () -> Void)?>

    internal init(_ cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = SQMutex(cancellation)
    }

    deinit {
        invalidate()
    }

    /// Ends the observation: no change that happens after this returns reaches the handler
    /// (one being delivered at this moment on another thread may still arrive). Idempotent.
    ///
    /// Thread-safe; never blocks. Foundation: `NSKeyValueObservation.invalidate()`.
    public func invalidate() {
        let cancel = cancellation.withLock { cancellation in
            let cancel = cancellation
            cancellation = nil
            return cancel
        }
        cancel?()
    }
}
