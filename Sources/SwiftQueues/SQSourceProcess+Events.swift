#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension SQSourceProcess {
    /// The process id the source watches (``SQSourceProtocol/handle`` as a `pid_t`).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProcess.handle`.
    public var handle: pid_t {
        let raw: UInt = handle
        return pid_t(truncatingIfNeeded: raw)
    }

    /// Inside the event handler, the events seen since the last call (``SQSourceProtocol/data``
    /// as an option set); outside it, those of the last call (empty before the first, and from
    /// the cancel handler on).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProcess.data`.
    public var data: SQSource.ProcessEvent {
        let raw: UInt = data
        return SQSource.ProcessEvent(rawValue: raw)
    }

    /// The events the source watches (``SQSourceProtocol/mask`` as an option set).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProcess.mask`.
    public var mask: SQSource.ProcessEvent {
        let raw: UInt = mask
        return SQSource.ProcessEvent(rawValue: raw)
    }
}
