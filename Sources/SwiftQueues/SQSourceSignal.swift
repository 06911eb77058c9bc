/// A source that counts deliveries of a signal to the process
/// (``SQSource/makeSignalSource(signal:queue:)``): SwiftQueues' `DispatchSourceSignal`.
///
/// ``SQSourceProtocol/data`` is the number of deliveries since the last handler call (standard
/// signals sent while one is pending count once: the kernel merges them). While a signal has a
/// source, the runtime's threads block it, and if its disposition was the default or "ignore",
/// the runtime installs a handler that counts it (the previous disposition comes back when the
/// last source for it is cancelled). So once a `SIGTERM` source is active (its registration
/// handler has run), `SIGTERM` no longer terminates the process: the handler decides. A handler the
/// program installed itself is left alone, and signals it
/// receives do not reach the source (see docs/sources.md).
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceSignal`. The usual Dispatch
/// preamble `signal(SIGTERM, SIG_IGN)` is not needed (and harmless before the source starts;
/// setting `SIG_IGN` while a source is active would discard the signal before it is counted).
public protocol SQSourceSignal: SQSourceProtocol {}
