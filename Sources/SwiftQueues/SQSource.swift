import CQueueCore

/// A dispatch source, and the factory of every kind of source: SwiftQueues' `DispatchSource`.
///
/// Make a source with a factory method and use it through the protocol of its kind:
///
/// ```swift
/// let timer = SQSource.makeTimerSource(queue: queue)
/// timer.schedule(deadline: .now(), repeating: .seconds(1), leeway: .milliseconds(10))
/// timer.setEventHandler { print("tick", timer.data) }
/// timer.activate()
/// // ...
/// timer.cancel()
/// ```
///
/// | factory | protocol | watches |
/// |---|---|---|
/// | ``makeTimerSource(flags:queue:)`` | ``SQSourceTimer`` | a deadline, once or repeating |
/// | ``makeSignalSource(signal:queue:)`` | ``SQSourceSignal`` | a signal |
/// | ``makeReadSource(fileDescriptor:queue:)`` | ``SQSourceRead`` | a descriptor, for reading |
/// | ``makeWriteSource(fileDescriptor:queue:)`` | ``SQSourceWrite`` | a descriptor, for writing |
/// | ``makeProcessSource(identifier:eventMask:queue:)`` | ``SQSourceProcess`` | a process's exit |
/// | ``makeFileSystemObjectSource(fileDescriptor:eventMask:queue:)`` | ``SQSourceFileSystemObject`` | a file or directory |
/// | ``makeUserDataAddSource(queue:)`` | ``SQSourceUserDataAdd`` | numbers the program adds |
/// | ``makeUserDataOrSource(queue:)`` | ``SQSourceUserDataOr`` | flags the program sets |
/// | ``makeUserDataReplaceSource(queue:)`` | ``SQSourceUserDataReplace`` | a value the program stores |
///
/// Each factory returns an object of a class of its own kind, so a timer is not a read source
/// (`source as? SQSourceRead` fails), unlike Dispatch, where one class conforms to every kind.
///
/// Thread-safety: every member may be called from any thread (see ``SQSourceProtocol``). The
/// wrapper owns one reference to the C `cq_source_t`; the C source keeps itself alive while it
/// is registered or has a handler queued, and keeps its target queue alive.
///
/// Porting from Dispatch: `DispatchSource` → `SQSource`, `DispatchSourceTimer` →
/// ``SQSourceTimer`` and so on; method names and labels are the same. The factories for
/// sources that watch something outside the program (signal, descriptors, process, file)
/// `throw` an ``SQSourceError`` carrying the errno on bad input, where Dispatch traps or returns
/// a source that never fires: add `try`.
public class SQSource: SQSourceProtocol, @unchecked Sendable {
    /// The C source. Immutable; the C core is thread-safe.
    internal let object: OpaquePointer

    /// Takes over the one reference of a source `cq_source_create` returned.
    internal init(object: OpaquePointer) {
        self.object = object
    }

    deinit {
        if cq_source_testcancel(object) == 0 {
            // As Dispatch: the last reference to a source that was not cancelled stops it
            // without calling its cancel handler, and its handlers are released. (A handler
            // that captured the source would have kept us alive: nothing captures us now.)
            cq_source_set_cancel_handler_ctx_f(object, nil, nil, nil)
            cq_source_cancel(object)
        }
        // Aborts with a message if the source is active and suspended (its cancel handler
        // could never run), as Dispatch does.
        cq_release(sqObject(object))
    }

    // MARK: - Handlers

    /// See ``SQSourceProtocol/setEventHandler(qos:flags:handler:)``.
    public func setEventHandler(qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?) {
        cq_source_set_handler_barrier(object, handler != nil && flags.contains(.barrier))
        guard let handler else {
            cq_source_set_event_handler_ctx_f(object, nil, nil, nil)
            return
        }
        cq_source_set_event_handler_ctx_f(
            object, sqSourceHandlerContext(handler), sqCallSourceHandler, sqReleaseSourceHandler)
    }

    /// See ``SQSourceProtocol/setCancelHandler(qos:flags:handler:)``.
    public func setCancelHandler(qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?) {
        guard let handler else {
            cq_source_set_cancel_handler_ctx_f(object, nil, nil, nil)
            return
        }
        cq_source_set_cancel_handler_ctx_f(
            object, sqSourceHandlerContext(handler), sqCallSourceHandler, sqReleaseSourceHandler)
    }

    /// See ``SQSourceProtocol/setRegistrationHandler(qos:flags:handler:)``.
    public func setRegistrationHandler(
        qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?
    ) {
        guard let handler else {
            cq_source_set_registration_handler_ctx_f(object, nil, nil, nil)
            return
        }
        cq_source_set_registration_handler_ctx_f(
            object, sqSourceHandlerContext(handler), sqCallSourceHandler, sqReleaseSourceHandler)
    }

    // MARK: - Life cycle

    /// See ``SQSourceProtocol/activate()``.
    public func activate() {
        cq_activate(sqObject(object))
    }

    /// See ``SQSourceProtocol/cancel()``.
    public func cancel() {
        cq_source_cancel(object)
    }

    /// See ``SQSourceProtocol/resume()``.
    public func resume() {
        cq_resume(sqObject(object))
    }

    /// See ``SQSourceProtocol/suspend()``.
    public func suspend() {
        cq_suspend(sqObject(object))
    }

    // MARK: - State

    /// See ``SQSourceProtocol/handle``.
    public var handle: UInt {
        cq_source_get_handle(object)
    }

    /// See ``SQSourceProtocol/mask``.
    public var mask: UInt {
        cq_source_get_mask(object)
    }

    /// See ``SQSourceProtocol/data``.
    public var data: UInt {
        cq_source_get_data(object)
    }

    /// See ``SQSourceProtocol/isCancelled``.
    public var isCancelled: Bool {
        cq_source_testcancel(object) != 0
    }
}
