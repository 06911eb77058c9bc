/// The closure type of a source's event, cancel and registration handlers
/// (``SQSourceProtocol/setEventHandler(qos:flags:handler:)``).
///
/// A handler runs on the source's target queue, so it must be `@Sendable`: it is called on a
/// pool thread, never on the thread that set it.
///
/// Dispatch: `DispatchSourceHandler` (which is not `@Sendable`; a handler that captures
/// non-`Sendable` state must be made `Sendable` to port it).
public typealias SQSourceHandler = @Sendable () -> Void
