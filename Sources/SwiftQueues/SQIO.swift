#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CQueueCore

/// A channel that reads and writes a file descriptor asynchronously, handing the bytes over as
/// ``SQData``: SwiftQueues' `DispatchIO`, with the same members and labels.
///
/// ```swift
/// let channel = SQIO(type: .stream, fileDescriptor: fd, queue: queue) { error in close(fd) }
/// channel.read(offset: 0, length: Int.max, queue: queue) { done, data, error in
///     if let data, !data.isEmpty { consume(data) }
///     if done { channel.close() }
/// }
/// ```
///
/// Handlers behave as Dispatch documents them: partial results (`done == false`) arrive as the
/// low- and high-water marks and the interval allow; the last call has `done == true` — with the
/// remaining bytes, empty data at end of file, or `nil` and an errno in `error` (`ECANCELED`
/// after `close(flags: .stop)`). A write's handler gets the data not yet written. Handlers of
/// one operation never overlap. Pipes and sockets run on the reactor; regular files on
/// io_uring (or a small thread pool where it is unavailable). A descriptor that is not open,
/// or a path that cannot be opened, ends operations with that errno; nothing traps. A write
/// to a pipe whose reader has gone, or to a closed socket, ends with `EPIPE` instead of
/// raising SIGPIPE (with Dispatch on Linux that signal ends the process).
///
/// Thread-safe. The channel is released with its last reference; operations keep it alive.
public final class SQIO: @unchecked Sendable {
    /// Dispatch: `DispatchIO.StreamType`.
    public enum StreamType: UInt, Sendable {
        /// Reads in order at the descriptor's position; writes likewise; offsets ignored.
        case stream = 0
        /// Offsets relative to the file position at creation; operations may overlap.
        case random = 1
    }

    /// Dispatch: `DispatchIO.CloseFlags`.
    public struct CloseFlags: OptionSet, Sendable, RawRepresentable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// End the pending and running operations with `ECANCELED`.
        public static let stop = CloseFlags(rawValue: UInt(CQ_IO_STOP))
    }

    /// Dispatch: `DispatchIO.IntervalFlags`.
    public struct IntervalFlags: OptionSet, Sendable, RawRepresentable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Deliver at every interval, even below the low-water mark (or nothing at all).
        public static let strictInterval = IntervalFlags(rawValue: UInt(CQ_IO_STRICT_INTERVAL))
    }

    /// The C channel (`cq_io_t`), owned. Not public API.
    internal let handle: OpaquePointer

    private init(adopting handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        cq_release(UnsafeMutableRawPointer(handle))
    }

    /// A channel on `fileDescriptor`; `cleanupHandler(error)` runs on `queue` once the channel
    /// no longer uses the descriptor (close it there). A descriptor that is not open gives a
    /// channel whose operations and cleanup report `EBADF`.
    public convenience init(
        type: StreamType, fileDescriptor: Int32, queue: SQQueue,
        cleanupHandler: @escaping @Sendable (_ error: Int32) -> Void
    ) {
        let box = SQIOCleanupBox(cleanupHandler, queue: queue)
        let ctx = Unmanaged.passRetained(box).toOpaque()
        let h = cq_io_create_f(type.rawValue, fileDescriptor, queue.handle, ctx, sqIOCleanupTrampoline)!
        self.init(adopting: h)
    }

    /// A channel on the file at `path` (absolute), opened with `open(path, oflag, mode)` on
    /// first use and closed by the channel. `nil` if the path is not absolute. An open that
    /// fails reaches the handlers and `cleanupHandler` as its errno.
    public convenience init?(
        type: StreamType, path: UnsafePointer<Int8>, oflag: Int32, mode: mode_t, queue: SQQueue,
        cleanupHandler: @escaping @Sendable (_ error: Int32) -> Void
    ) {
        let box = SQIOCleanupBox(cleanupHandler, queue: queue)
        let ctx = Unmanaged.passRetained(box).toOpaque()
        guard
            let h = cq_io_create_with_path_f(
                type.rawValue, path, oflag, mode, queue.handle, ctx, sqIOCleanupTrampoline)
        else {
            Unmanaged<SQIOCleanupBox>.fromOpaque(ctx).release()
            return nil
        }
        self.init(adopting: h)
    }

    /// A channel of `type` on the descriptor of `io`; the descriptor is released once both
    /// channels are done with it.
    public convenience init(
        type: StreamType, io: SQIO, queue: SQQueue,
        cleanupHandler: @escaping @Sendable (_ error: Int32) -> Void
    ) {
        let box = SQIOCleanupBox(cleanupHandler, queue: queue)
        let ctx = Unmanaged.passRetained(box).toOpaque()
        let h = cq_io_create_with_io_f(type.rawValue, io.handle, queue.handle, ctx, sqIOCleanupTrampoline)!
        self.init(adopting: h)
    }

    /// Reads `length` bytes (`Int.max` or more: to end of file) at `offset` (random channels),
    /// calling `ioHandler(done, data, error)` on `queue` as described above.
    public func read(
        offset: off_t, length: Int, queue: SQQueue,
        ioHandler: @escaping @Sendable (_ done: Bool, _ data: SQData?, _ error: Int32) -> Void
    ) {
        let box = SQIOHandlerBox(ioHandler, queue: queue)
        let len = length < 0 ? 0 : (length == Int.max ? Int(bitPattern: UInt(SIZE_MAX)) : length)
        cq_io_read_f(
            handle, offset, len, queue.handle, Unmanaged.passRetained(box).toOpaque(),
            sqIOHandlerTrampoline)
    }

    /// Writes `data` at `offset` (random channels), calling `ioHandler(done, remaining, error)`
    /// on `queue`: `remaining` is what is not written yet (`nil` once all of it is).
    public func write(
        offset: off_t, data: SQData, queue: SQQueue,
        ioHandler: @escaping @Sendable (_ done: Bool, _ data: SQData?, _ error: Int32) -> Void
    ) {
        let box = SQIOHandlerBox(ioHandler, queue: queue)
        cq_io_write_f(
            handle, offset, data.cHandle, queue.handle, Unmanaged.passRetained(box).toOpaque(),
            sqIOHandlerTrampoline)
    }

    /// No new operations; with `.stop` the pending and running ones end with `ECANCELED`.
    public func close(flags: CloseFlags = []) {
        cq_io_close(handle, flags.rawValue)
    }

    /// Runs `execute` on the global queue of the channel queue's priority (as Dispatch does)
    /// once the operations submitted before it are done, and before any submitted after it
    /// start.
    public func barrier(execute: @escaping @Sendable () -> Void) {
        let box = SQIOBarrierBox(execute)
        cq_io_barrier_f(handle, Unmanaged.passRetained(box).toOpaque(), sqIOBarrierTrampoline)
    }

    /// The descriptor, or -1 if it is not open (yet, or any more).
    public var fileDescriptor: Int32 {
        cq_io_get_descriptor(handle)
    }

    /// Data handed to handlers is never longer than `highWater` bytes.
    public func setLimit(highWater: Int) {
        cq_io_set_high_water(handle, highWater < 1 ? 1 : highWater)
    }

    /// Partial results wait for at least `lowWater` bytes (`Int.max`: none).
    public func setLimit(lowWater: Int) {
        cq_io_set_low_water(
            handle, lowWater == Int.max ? Int(bitPattern: UInt(SIZE_MAX)) : max(lowWater, 0))
    }

    /// Delivers partial results every `interval` (see ``IntervalFlags/strictInterval``).
    public func setInterval(interval: SQTimeInterval, flags: IntervalFlags = []) {
        let ns = interval.clampedNanoseconds
        cq_io_set_interval(handle, ns <= 0 ? 0 : UInt64(ns), flags.rawValue)
    }

    /// Reads up to `maxLength` bytes from `fromFileDescriptor` (from a file: up to end of file,
    /// all of it for `Int.max`), then calls `handler(data, error)` once on `queue`. From a pipe
    /// or socket it waits for data and takes what is available then, up to `maxLength`, as
    /// Dispatch does.
    public class func read(
        fromFileDescriptor: Int32, maxLength: Int, runningHandlerOn queue: SQQueue,
        handler: @escaping @Sendable (_ data: SQData, _ error: Int32) -> Void
    ) {
        let box = SQIODataBox({ data, error in handler(data ?? .empty, error) }, queue: queue)
        let len = maxLength == Int.max ? Int(bitPattern: UInt(SIZE_MAX)) : max(maxLength, 0)
        cq_read_f(
            fromFileDescriptor, len, queue.handle, Unmanaged.passRetained(box).toOpaque(),
            sqIODataTrampoline)
    }

    /// Writes all of `data` to `toFileDescriptor`, then calls `handler(remaining, error)` once
    /// on `queue` (`nil` remaining: all written).
    public class func write(
        toFileDescriptor: Int32, data: SQData, runningHandlerOn queue: SQQueue,
        handler: @escaping @Sendable (_ data: SQData?, _ error: Int32) -> Void
    ) {
        let box = SQIODataBox(handler, queue: queue)
        cq_write_f(
            toFileDescriptor, data.cHandle, queue.handle, Unmanaged.passRetained(box).toOpaque(),
            sqIODataTrampoline)
    }
}

// ---- boxes and trampolines ---------------------------------------------------------------------

/// Adopts a borrowed C data object (the handler's argument) as an `SQData`.
internal func sqDataBorrowed(_ data: OpaquePointer?) -> SQData? {
    guard let data else { return nil }
    cq_retain(UnsafeMutableRawPointer(data))
    return SQData(adopting: data)
}

internal final class SQIOCleanupBox: @unchecked Sendable {
    let body: @Sendable (Int32) -> Void
    let queue: SQQueue
    init(_ body: @escaping @Sendable (Int32) -> Void, queue: SQQueue) {
        self.body = body
        self.queue = queue
    }
}

internal final class SQIOHandlerBox: @unchecked Sendable {
    let body: @Sendable (Bool, SQData?, Int32) -> Void
    let queue: SQQueue
    init(_ body: @escaping @Sendable (Bool, SQData?, Int32) -> Void, queue: SQQueue) {
        self.body = body
        self.queue = queue
    }
}

internal final class SQIODataBox: @unchecked Sendable {
    let body: @Sendable (SQData?, Int32) -> Void
    let queue: SQQueue
    init(_ body: @escaping @Sendable (SQData?, Int32) -> Void, queue: SQQueue) {
        self.body = body
        self.queue = queue
    }
}

internal final class SQIOBarrierBox: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

private let sqIOCleanupTrampoline: cq_io_cleanup_function_t = { ctx, error in
    Unmanaged<SQIOCleanupBox>.fromOpaque(ctx!).takeRetainedValue().body(error)
}

private let sqIOHandlerTrampoline: cq_io_handler_function_t = { ctx, done, data, error in
    let unmanaged = Unmanaged<SQIOHandlerBox>.fromOpaque(ctx!)
    unmanaged.takeUnretainedValue().body(done, sqDataBorrowed(data), error)
    if done {
        unmanaged.release()
    }
}

private let sqIODataTrampoline: cq_io_data_function_t = { ctx, data, error in
    Unmanaged<SQIODataBox>.fromOpaque(ctx!).takeRetainedValue().body(sqDataBorrowed(data), error)
}

private let sqIOBarrierTrampoline: cq_function_t = { ctx in
    Unmanaged<SQIOBarrierBox>.fromOpaque(ctx!).takeRetainedValue().body()
}
