extension SQSourceFileSystemObject {
    /// The descriptor the source watches (``SQSourceProtocol/handle`` as an `Int32`).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceFileSystemObject.handle`.
    public var handle: Int32 {
        let raw: UInt = handle
        return Int32(truncatingIfNeeded: raw)
    }

    /// Inside the event handler, the events seen since the last call (``SQSourceProtocol/data``
    /// as an option set); outside it, those of the last call (empty before the first, and from
    /// the cancel handler on).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceFileSystemObject.data`.
    public var data: SQSource.FileSystemEvent {
        let raw: UInt = data
        return SQSource.FileSystemEvent(rawValue: raw)
    }

    /// The events the source watches (``SQSourceProtocol/mask`` as an option set; without
    /// ``SQSource/FileSystemEvent/funlock``, which Linux cannot watch).
    ///
    /// Thread-safe. Dispatch: `DispatchSourceFileSystemObject.mask`.
    public var mask: SQSource.FileSystemEvent {
        let raw: UInt = mask
        return SQSource.FileSystemEvent(rawValue: raw)
    }
}
