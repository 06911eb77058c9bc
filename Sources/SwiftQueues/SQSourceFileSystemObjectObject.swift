/// The class of a file-system source
/// (``SQSource/makeFileSystemObjectSource(fileDescriptor:eventMask:queue:)``). Its typed
/// `handle`, `data` and `mask` come from the ``SQSourceFileSystemObject`` extension.
/// Not public API: callers see it as `any SQSourceFileSystemObject`.
internal final class SQSourceFileSystemObjectObject: SQSource, SQSourceFileSystemObject,
    @unchecked Sendable
{}
