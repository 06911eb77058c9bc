#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a source could not be made: the errno the C core reported, and the call.
///
/// Thrown by the ``SQSource`` factories for sources that watch something outside the program:
///
/// | errno | when |
/// |---|---|
/// | `EBADF` | read, write or file-system source on a descriptor that is not open (or negative) |
/// | `EINVAL` | not a catchable signal (≤ 0, too large, `SIGKILL`, `SIGSTOP`); a bad event mask |
/// | `ESRCH` | a process that does not exist (or a pid ≤ 0) |
/// | `EMFILE`, `ENFILE`, `ENOMEM` | the kernel refused a descriptor or memory |
/// | `ENOSPC`, `ENOENT`, `EACCES` | file system: no inotify watch left; no path to watch |
///
/// A value type; thread-safe. Dispatch has no counterpart: its factories trap, or return a
/// source that never fires.
public struct SQSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The errno value (`EBADF`, `EINVAL`, `ESRCH`, ...).
    public let errno: Int32

    /// The factory call that failed, with its arguments, e.g. `makeReadSource(fileDescriptor: -1)`.
    public let operation: String

    /// Creates an error for `operation` failing with `errno`.
    public init(errno: Int32, operation: String) {
        self.errno = errno
        self.operation = operation
    }

    /// The errno as a `POSIXErrorCode` (`.EBADF`, ...), if it is one.
    public var code: POSIXErrorCode? {
        POSIXErrorCode(rawValue: errno)
    }

    /// `operation: message (errno N)`, for logs.
    public var description: String {
        "SQSource.\(operation): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
