extension SQSource {
    /// What a file-system source watches and reports
    /// (``SQSource/makeFileSystemObjectSource(fileDescriptor:eventMask:queue:)``; what each one
    /// means on Linux: ``SQSourceFileSystemObject``). The raw values are Dispatch's (and the C
    /// core's `CQ_VNODE_*`).
    ///
    /// Dispatch (Darwin): `DispatchSource.FileSystemEvent`.
    public struct FileSystemEvent: OptionSet, Sendable, Hashable {
        public let rawValue: UInt

        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// The file was deleted (unlinked).
        public static let delete = FileSystemEvent(rawValue: 0x1)
        /// The contents changed (for a directory: an entry was added, removed or renamed).
        public static let write = FileSystemEvent(rawValue: 0x2)
        /// The file grew.
        public static let extend = FileSystemEvent(rawValue: 0x4)
        /// Metadata changed (mode, owner, times, link count).
        public static let attrib = FileSystemEvent(rawValue: 0x8)
        /// The link count changed.
        public static let link = FileSystemEvent(rawValue: 0x10)
        /// The file was renamed or moved.
        public static let rename = FileSystemEvent(rawValue: 0x20)
        /// The file system was unmounted (Linux has no `revoke(2)`).
        public static let revoke = FileSystemEvent(rawValue: 0x40)
        /// A lock was released. Accepted, never reported: inotify has no such event.
        public static let funlock = FileSystemEvent(rawValue: 0x100)
        /// Every event Linux can report (as in Dispatch, without ``funlock``).
        public static let all: FileSystemEvent = [
            .delete, .write, .extend, .attrib, .link, .rename, .revoke,
        ]
    }
}
