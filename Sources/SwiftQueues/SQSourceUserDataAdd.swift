/// A source whose events are numbers the program adds
/// (``SQSource/makeUserDataAddSource(queue:)``): SwiftQueues' `DispatchSourceUserDataAdd`.
///
/// Each ``add(data:)`` schedules the event handler; additions made before it runs coalesce, and
/// ``SQSourceProtocol/data`` is their sum (wrapping). Useful to count events cheaply from many
/// threads and handle them in batches on one queue.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceUserDataAdd`.
public protocol SQSourceUserDataAdd: SQSourceProtocol {
    /// Adds `data` to the pending sum and schedules the event handler. Adding 0 changes nothing
    /// and schedules nothing. Additions to a suspended source wait for the resume; to a
    /// cancelled one, they are dropped.
    ///
    /// Any thread; never blocks (not async-signal-safe). Everything the caller did before the
    /// call happens-before the handler call that sees it. Dispatch:
    /// `DispatchSourceUserDataAdd.add(data:)`.
    func add(data: UInt)
}
