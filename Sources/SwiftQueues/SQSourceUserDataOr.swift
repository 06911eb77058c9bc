/// A source whose events are bit flags the program sets
/// (``SQSource/makeUserDataOrSource(queue:)``): SwiftQueues' `DispatchSourceUserDataOr`.
///
/// Each ``or(data:)`` schedules the event handler; values merged before it runs coalesce, and
/// ``SQSourceProtocol/data`` is their bitwise OR.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceUserDataOr`.
public protocol SQSourceUserDataOr: SQSourceProtocol {
    /// ORs `data` into the pending flags and schedules the event handler. OR-ing 0 changes
    /// nothing and schedules nothing.
    ///
    /// Any thread; never blocks (not async-signal-safe). Everything the caller did before the
    /// call happens-before the handler call that sees it. Dispatch:
    /// `DispatchSourceUserDataOr.or(data:)`.
    func or(data: UInt)
}
