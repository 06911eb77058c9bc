import CQueueCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension SQSource {
    /// A new, inactive timer source (``SQSourceTimer``). Give it a schedule
    /// (`schedule(deadline:repeating:leeway:)`) and an event handler, then
    /// ``SQSourceProtocol/activate()`` it.
    ///
    /// - Parameters:
    ///   - flags: ``TimerFlags/strict`` is accepted and changes nothing (see there).
    ///   - queue: where the handlers run; `nil` means the default-priority global queue. The
    ///     source keeps it alive.
    ///
    /// Thread-safe; never blocks. Stops the process with a message if the runtime's reactor
    /// cannot start (descriptors or memory exhausted). Dispatch:
    /// `DispatchSource.makeTimerSource(flags:queue:)`.
    public static func makeTimerSource(
        flags: TimerFlags = [],
        queue: SQQueue? = nil
    ) -> any SQSourceTimer {
        SQSourceTimerObject(
            object: createOrStop(CQ_SOURCE_KIND_TIMER, queue, "makeTimerSource(flags:queue:)"))
    }

    /// A new, inactive source counting deliveries of `signal` to the process
    /// (``SQSourceSignal``).
    ///
    /// - Parameters:
    ///   - signal: a catchable signal number (`SIGTERM`, `SIGUSR1`, ...).
    ///   - queue: where the handlers run; `nil` means the default-priority global queue.
    /// - Throws: ``SQSourceError`` with `EINVAL` for a number that is not a catchable signal
    ///   (≤ 0, too large, `SIGKILL`, `SIGSTOP`), or the errno of a resource the kernel refused.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSource.makeSignalSource(signal:queue:)`,
    /// which does not throw (add `try`).
    public static func makeSignalSource(
        signal: Int32,
        queue: SQQueue? = nil
    ) throws(SQSourceError) -> any SQSourceSignal {
        SQSourceSignalObject(
            object: try create(
                CQ_SOURCE_KIND_SIGNAL, handle: UInt(bitPattern: Int(signal)), mask: 0, queue,
                "makeSignalSource(signal: \(signal))"))
    }

    /// A new, inactive source that fires while `fileDescriptor` has data to read
    /// (``SQSourceRead``). The descriptor stays the caller's: close it in the cancel handler.
    ///
    /// - Parameters:
    ///   - fileDescriptor: an open descriptor (pipe, socket, FIFO, terminal, eventfd, regular
    /// file, ...). Make it non-blocking if the handler may read more than
    /// ``SQSourceProtocol/data``.
    ///   - queue: where the handlers run; `nil` means the default-priority global queue.
    /// - Throws: ``SQSourceError`` with `EBADF` if the descriptor is not open (or negative), or
    ///   the errno of a resource the kernel refused.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSource.makeReadSource(fileDescriptor:queue:)`,
    /// which does not throw (add `try`).
    public static func makeReadSource(
        fileDescriptor: Int32,
        queue: SQQueue? = nil
    ) throws(SQSourceError) -> any SQSourceRead {
        SQSourceReadObject(
            object: try create(
                CQ_SOURCE_KIND_READ, handle: UInt(bitPattern: Int(fileDescriptor)), mask: 0, queue,
                "makeReadSource(fileDescriptor: \(fileDescriptor))"))
    }

    /// A new, inactive source that fires while `fileDescriptor` has room to write
    /// (``SQSourceWrite``). The descriptor stays the caller's: close it in the cancel handler.
    ///
    /// - Parameters:
    ///   - fileDescriptor: an open descriptor (pipe, socket, ...).
    ///   - queue: where the handlers run; `nil` means the default-priority global queue.
    /// - Throws: ``SQSourceError`` with `EBADF` if the descriptor is not open (or negative), or
    ///   the errno of a resource the kernel refused.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSource.makeWriteSource(fileDescriptor:queue:)`,
    /// which does not throw (add `try`).
    public static func makeWriteSource(
        fileDescriptor: Int32,
        queue: SQQueue? = nil
    ) throws(SQSourceError) -> any SQSourceWrite {
        SQSourceWriteObject(
            object: try create(
                CQ_SOURCE_KIND_WRITE, handle: UInt(bitPattern: Int(fileDescriptor)), mask: 0, queue,
                "makeWriteSource(fileDescriptor: \(fileDescriptor))"))
    }

    /// A new, inactive source watching the process `identifier` (``SQSourceProcess``): any
    /// process, not only a child. Only ``ProcessEvent/exit`` is ever reported on Linux.
    ///
    /// - Parameters:
    ///   - identifier: the process id.
    ///   - eventMask: the events to watch; not empty.
    ///   - queue: where the handlers run; `nil` means the default-priority global queue.
    /// - Throws: ``SQSourceError`` with `ESRCH` if there is no such process (or the pid is
    ///   ≤ 0), `EINVAL` for an empty mask or an unknown bit, or the errno of a resource the
    ///   kernel refused (a pidfd).
    ///
    /// Thread-safe; never blocks. Dispatch (Darwin only):
    /// `DispatchSource.makeProcessSource(identifier:eventMask:queue:)`, which does not throw.
    public static func makeProcessSource(
        identifier: pid_t,
        eventMask: ProcessEvent,
        queue: SQQueue? = nil
    ) throws(SQSourceError) -> any SQSourceProcess {
        SQSourceProcessObject(
            object: try create(
                CQ_SOURCE_KIND_PROC, handle: UInt(bitPattern: Int(identifier)),
                mask: eventMask.rawValue, queue,
                "makeProcessSource(identifier: \(identifier), "
                    + "eventMask: 0x\(hex(eventMask.rawValue)))"
            ))
    }

    /// A new, inactive source watching the file or directory open as `fileDescriptor`
    /// (``SQSourceFileSystemObject``). The descriptor stays the caller's: close it in the cancel
    /// handler.
    ///
    /// - Parameters:
    ///   - fileDescriptor: an open descriptor of the file or directory (`O_RDONLY` will do).
    ///   - eventMask: the events to watch; not empty. ``FileSystemEvent/funlock`` is accepted
    ///     and never reported.
    ///   - queue: where the handlers run; `nil` means the default-priority global queue.
    /// - Throws: ``SQSourceError`` with `EBADF` if the descriptor is not open (or negative),
    ///   `EINVAL` for an empty mask (or only ``FileSystemEvent/funlock``) or an unknown bit,
    ///   `ENOENT` if the file was already deleted, or the errno of a resource the kernel refused
    ///   (`ENOSPC`: the inotify watch limit).
    ///
    /// Thread-safe; never blocks. Dispatch (Darwin only):
    /// `DispatchSource.makeFileSystemObjectSource(fileDescriptor:eventMask:queue:)`, which does
    /// not throw.
    public static func makeFileSystemObjectSource(
        fileDescriptor: Int32,
        eventMask: FileSystemEvent,
        queue: SQQueue? = nil
    ) throws(SQSourceError) -> any SQSourceFileSystemObject {
        SQSourceFileSystemObjectObject(
            object: try create(
                CQ_SOURCE_KIND_VNODE, handle: UInt(bitPattern: Int(fileDescriptor)),
                mask: eventMask.subtracting(.funlock).rawValue, queue,
                "makeFileSystemObjectSource(fileDescriptor: \(fileDescriptor), "
                    + "eventMask: 0x\(hex(eventMask.rawValue)))"))
    }

    /// A new, inactive source whose events are numbers added with
    /// ``SQSourceUserDataAdd/add(data:)``; ``SQSourceProtocol/data`` is their sum.
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchSource.makeUserDataAddSource(queue:)`.
    public static func makeUserDataAddSource(queue: SQQueue? = nil) -> any SQSourceUserDataAdd {
        SQSourceUserDataAddObject(
            object: createOrStop(CQ_SOURCE_KIND_DATA_ADD, queue, "makeUserDataAddSource(queue:)"))
    }

    /// A new, inactive source whose events are flags set with
    /// ``SQSourceUserDataOr/or(data:)``; ``SQSourceProtocol/data`` is their OR.
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchSource.makeUserDataOrSource(queue:)`.
    public static func makeUserDataOrSource(queue: SQQueue? = nil) -> any SQSourceUserDataOr {
        SQSourceUserDataOrObject(
            object: createOrStop(CQ_SOURCE_KIND_DATA_OR, queue, "makeUserDataOrSource(queue:)"))
    }

    /// A new, inactive source whose event is the last value stored with
    /// ``SQSourceUserDataReplace/replace(data:)``.
    ///
    /// Thread-safe; never blocks. Stops the process if memory is exhausted.
    /// Dispatch: `DispatchSource.makeUserDataReplaceSource(queue:)`.
    public static func makeUserDataReplaceSource(
        queue: SQQueue? = nil
    ) -> any SQSourceUserDataReplace {
        SQSourceUserDataReplaceObject(
            object: createOrStop(
                CQ_SOURCE_KIND_DATA_REPLACE, queue, "makeUserDataReplaceSource(queue:)"))
    }

    // MARK: - Creation

    /// `cq_source_create`, or the error it reported (errno is read right after the call, on
    /// this thread).
    private static func create(
        _ kind: cq_source_kind_t,
        handle: UInt,
        mask: UInt,
        _ queue: SQQueue?,
        _ operation: @autoclosure () -> String
    ) throws(SQSourceError) -> OpaquePointer {
        if let created = cq_source_create(cq_source_type(kind), handle, mask, queue?.handle) {
            return created
        }
        let code = errno
        throw SQSourceError(errno: code, operation: operation())
    }

    /// For the kinds that take no handle (timers and user data), whose creation fails only
    /// when the process runs out of resources: stop with the error.
    private static func createOrStop(
        _ kind: cq_source_kind_t,
        _ queue: SQQueue?,
        _ operation: @autoclosure () -> String
    ) -> OpaquePointer {
        do {
            return try create(kind, handle: 0, mask: 0, queue, operation())
        } catch {
            fatalError("\(error)")
        }
    }

    private static func hex(_ value: UInt) -> String {
        String(value, radix: 16)
    }
}
