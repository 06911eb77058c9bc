/// A source whose event is the latest value the program stored
/// (``SQSource/makeUserDataReplaceSource(queue:)``): SwiftQueues' `DispatchSourceUserDataReplace`.
///
/// Each ``replace(data:)`` schedules the event handler; ``SQSourceProtocol/data`` is the last
/// value stored before it ran (earlier ones are overwritten).
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceUserDataReplace`.
public protocol SQSourceUserDataReplace: SQSourceProtocol {
    /// Replaces the pending value with `data` and schedules the event handler. Storing 0 clears
    /// the pending value and schedules nothing.
    ///
    /// Any thread; never blocks (not async-signal-safe). Everything the caller did before the
    /// call happens-before the handler call that sees it.
    /// Dispatch: `DispatchSourceUserDataReplace.replace(data:)`.
    func replace(data: UInt)
}
