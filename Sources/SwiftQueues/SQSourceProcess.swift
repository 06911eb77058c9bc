#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A source that watches another process
/// (``SQSource/makeProcessSource(identifier:eventMask:queue:)``): SwiftQueues'
/// `DispatchSourceProcess`, which Dispatch on Linux does not have.
///
/// ``SQSource/ProcessEvent/exit`` is exact: it is reported when the process exits, whether or
/// not it is a child of this one (through a pidfd). Reaping a child (`waitpid`) stays the
/// caller's job. ``SQSource/ProcessEvent/fork``, ``SQSource/ProcessEvent/exec`` and
/// ``SQSource/ProcessEvent/signal`` are accepted but never reported: Linux tells another
/// process's forks, execs and signals only to a tracer.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch (Darwin): `DispatchSourceProcess`.
public protocol SQSourceProcess: SQSourceProtocol {
    /// The process id the source watches. Dispatch: `DispatchSourceProcess.handle`.
    var handle: pid_t { get }

    /// Inside the event handler, the events seen since the last call; outside it, those of the
    /// last call (empty before the first, and from the cancel handler on).
    /// Dispatch: `DispatchSourceProcess.data`.
    var data: SQSource.ProcessEvent { get }

    /// The events the source was made to watch. Dispatch: `DispatchSourceProcess.mask`.
    var mask: SQSource.ProcessEvent { get }
}
