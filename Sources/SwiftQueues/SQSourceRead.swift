/// A source that watches a descriptor for data to read
/// (``SQSource/makeReadSource(fileDescriptor:queue:)``): SwiftQueues' `DispatchSourceRead`.
///
/// The event handler runs while the descriptor is readable; ``SQSourceProtocol/data`` is the
/// number of bytes available (an estimate) and 0 at end of file or hang-up, where `read`
/// returns 0: cancel the source then (the end of a pipe or socket is reported once). The source
/// is level-triggered, as in Dispatch: a handler may read only part of what is there and is
/// called again while data remains. A regular file is always readable (its handler keeps being
/// called at the end, which is how it sees the file grow). Where the kernel cannot tell how
/// much there is (an eventfd, timerfd or listening socket), the data is 1.
///
/// Thread-safety: as ``SQSourceProtocol``. Dispatch: `DispatchSourceRead`.
public protocol SQSourceRead: SQSourceProtocol {}
