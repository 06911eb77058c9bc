/// A source that watches a file or directory through an open descriptor
/// (``SQSource/makeFileSystemObjectSource(fileDescriptor:eventMask:queue:)``): SwiftQueues'
/// `DispatchSourceFileSystemObject`, which Dispatch on Linux does not have.
///
/// It watches the inode (through inotify), so it follows the file through renames. What each
/// ``SQSource/FileSystemEvent`` means on Linux:
/// - ``SQSource/FileSystemEvent/delete``: the file was unlinked (its link count dropped to 0 —
///   the source's own descriptor keeps it open) or deleted;
/// - ``SQSource/FileSystemEvent/write``: its contents changed; for a directory, an entry was
///   created, removed or renamed;
/// - ``SQSource/FileSystemEvent/extend``: it was written and grew;
/// - ``SQSource/FileSystemEvent/attrib``: its mode, owner, times or link count changed;
/// - ``SQSource/FileSystemEvent/link``: its link count changed;
/// - ``SQSource/FileSystemEvent/rename``: it was renamed or moved;
/// - ``SQSource/FileSystemEvent/revoke``: its file system was unmounted;
/// - ``SQSource/FileSystemEvent/funlock``: accepted, never reported (inotify has no such event).
///
/// The descriptor stays the caller's: close it in the cancel handler.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch (Darwin): `DispatchSourceFileSystemObject`.
public protocol SQSourceFileSystemObject: SQSourceProtocol {
    /// The descriptor the source watches. Dispatch: `DispatchSourceFileSystemObject.handle`.
    var handle: Int32 { get }

    /// Inside the event handler, the events seen since the last call; outside it, those of the
    /// last call (empty before the first, and from the cancel handler on).
    /// Dispatch: `DispatchSourceFileSystemObject.data`.
    var data: SQSource.FileSystemEvent { get }

    /// The events the source watches. Dispatch: `DispatchSourceFileSystemObject.mask`.
    var mask: SQSource.FileSystemEvent { get }
}
