#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An I/O operation that failed: the errno the handler reported (`ECANCELED` after a close
/// with `.stop`, `EBADF`, `ENOENT`, ...). Thrown by the async forms of ``SQIO``.
public struct SQIOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The errno value.
    public let errno: Int32

    public init(errno: Int32) { self.errno = errno }

    public var description: String {
        "SQIOError(errno: \(errno), \(String(cString: strerror(errno))))"
    }
}

extension SQIO {
    /// The bytes of a read as they arrive: `for try await chunk in channel.read(offset:length:)`.
    /// Each element is one partial delivery (never empty); the sequence ends at the requested
    /// length or end of file, or throws ``SQIOError``. Stopping the iteration early does not
    /// stop the read: close the channel for that.
    public func read(offset: off_t, length: Int) -> AsyncThrowingStream<SQData, any Error> {
        AsyncThrowingStream { continuation in
            self.read(offset: offset, length: length, queue: SQQueue.global()) { done, data, error in
                if let data, !data.isEmpty {
                    continuation.yield(data)
                }
                if done {
                    if error != 0 {
                        continuation.finish(throwing: SQIOError(errno: error))
                    } else {
                        continuation.finish()
                    }
                }
            }
        }
    }

    /// Reads up to `maxLength` bytes from a descriptor: from a file, up to end of file
    /// (`Int.max`: all of it); from a pipe or socket, it waits for data and returns what is
    /// available then, up to `maxLength`, as Dispatch does. To read a pipe or socket to its
    /// end, read through a stream channel (``read(offset:length:)`` on an ``SQIO``), or call
    /// this again until it returns empty data.
    ///
    /// Cancellation: not observed. A cancelled task still waits until the read ends (data,
    /// end of file or an error), since bytes the read has taken from the descriptor would
    /// otherwise be lost. To stop a read that may wait for ever, read through a channel
    /// (``read(offset:length:)`` on an ``SQIO``) and close it with `.stop` on cancellation.
    public static func read(fromFileDescriptor fd: Int32, maxLength: Int) async throws -> SQData {
        try await withCheckedThrowingContinuation { continuation in
            SQIO.read(fromFileDescriptor: fd, maxLength: maxLength, runningHandlerOn: SQQueue.global()) {
                data, error in
                if error != 0 {
                    continuation.resume(throwing: SQIOError(errno: error))
                } else {
                    continuation.resume(returning: data)
                }
            }
        }
    }

    /// Writes all of `data` to a descriptor; throws ``SQIOError`` if it could not.
    ///
    /// Cancellation: not observed (as ``read(fromFileDescriptor:maxLength:)``).
    public static func write(toFileDescriptor fd: Int32, data: SQData) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            SQIO.write(toFileDescriptor: fd, data: data, runningHandlerOn: SQQueue.global()) {
                _, error in
                if error != 0 {
                    continuation.resume(throwing: SQIOError(errno: error))
                } else {
                    continuation.resume()
                }
            }
        }
    }
}
