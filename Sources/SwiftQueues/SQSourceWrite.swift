/// A source that watches a descriptor for room to write
/// (``SQSource/makeWriteSource(fileDescriptor:queue:)``): SwiftQueues' `DispatchSourceWrite`.
///
/// The event handler runs while the descriptor is writable; ``SQSourceProtocol/data`` is an
/// estimate of the room (socket send buffer or pipe capacity minus what is queued; 1 if
/// unknown). Level-triggered, as in Dispatch: suspend or cancel the source when there is nothing
/// left to write, or it keeps firing.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceWrite`.
public protocol SQSourceWrite: SQSourceProtocol {}
