/// What every dispatch source can do: set its handlers, start, pause and stop it, and read what
/// happened: SwiftQueues' `DispatchSourceProtocol`.
///
/// A source watches one thing (a timer, a signal, a descriptor, a process, a file, or data merged
/// by the program) and runs its event handler on its target queue when that thing happens. Make
/// one with the ``SQSource`` factory methods (``SQSource/makeTimerSource(flags:queue:)``, ...);
/// each returns the protocol of its kind (``SQSourceTimer``, ``SQSourceRead``, ...), which refines
/// this one.
///
/// Life cycle:
/// 1. A new source is *inactive*: set its handlers (and a timer's schedule) first.
/// 2. ``activate()`` (or a first ``resume()``) starts it: the registration handler runs once,
///    then the event handler runs for each batch of events.
/// 3. ``cancel()`` stops it: no event handler starts afterwards; once a running one has
///    returned, the cancel handler runs exactly once, and the source lets go of all its handlers
///    (and of whatever they captured). Close a watched descriptor in the cancel handler, not
///    before.
///
/// Events that arrive while the event handler is queued or running, or while the source is
/// suspended, *coalesce*: the next handler call sees them together in ``data`` (a count, a byte
/// count, or an OR of flags, depending on the kind). Handlers of one source never run at the same
/// time as each other.
///
/// A handler may capture its own source strongly: the source lets go of its handlers once the
/// cancel handler has run, which breaks the cycle. A source that is never cancelled and whose
/// handlers capture it lives for ever, as in Dispatch. Dropping the last reference to an active
/// source stops it without calling its cancel handler (as Dispatch does); dropping the last
/// reference to a suspended, active source stops the process with a message (balance every
/// ``suspend()`` first).
///
/// Thread-safety: every member may be called from any thread, also from the source's own
/// handlers; none blocks.
///
/// Porting from Dispatch: `DispatchSourceProtocol` → `SQSourceProtocol`; the member names and
/// labels are the same. The protocol is class-bound and `Sendable`, so a source can be captured
/// by its `@Sendable` handlers and held in a `weak` variable. The `qos:` and `flags:` arguments of
/// the handler setters are accepted and ignored (see
/// ``setEventHandler(qos:flags:handler:)``).
public protocol SQSourceProtocol: AnyObject, Sendable {
    /// Sets the closure run for each batch of events, replacing the previous one (`nil` removes
    /// it). Read ``data`` inside it to learn what happened.
    ///
    /// Set it before ``activate()``; set later, it takes effect from the next batch. The replaced
    /// closure is released once no call of it can be running. Handlers run one at a time on
    /// the source whatever the flags say. With `.barrier`, on a concurrent target queue, each
    /// call runs as a barrier there (alone, as Dispatch runs it); the other flags and `qos` are
    /// accepted for Dispatch compatibility and change nothing: handlers run at the priority of
    /// the target queue.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceProtocol.setEventHandler(qos:flags:handler:)`.
    func setEventHandler(qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?)

    /// Makes performing `handler` the event handler, replacing the previous one. Each batch of
    /// events performs the item (``SQWorkItem/perform()``): once it is cancelled, the calls
    /// return at once; its first run finishes it (its `wait` returns, its `notify` work is
    /// submitted). The source keeps the item until the handler is replaced or the cancel
    /// handler has run.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.setEventHandler(handler:)`.
    func setEventHandler(handler: SQWorkItem)

    /// Sets the closure run once after ``cancel()``, once no event handler is running (`nil`
    /// removes it). After it has run, the source releases all its handlers.
    ///
    /// `qos` and `flags` are accepted and ignored, as for the event handler. Thread-safe; never
    /// blocks. Dispatch: `DispatchSourceProtocol.setCancelHandler(qos:flags:handler:)`.
    func setCancelHandler(qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?)

    /// Makes performing `handler` the cancel handler (see
    /// ``setEventHandler(handler:)`` for how the item is performed and kept).
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.setCancelHandler(handler:)`.
    func setCancelHandler(handler: SQWorkItem)

    /// Sets the closure run once when the source has started watching, right after the first
    /// ``activate()``/``resume()`` (`nil` removes it). It does not run if the source is cancelled
    /// first. One set on a source that has already started watching runs once, as soon as it
    /// can (as in Dispatch). It is released after it has run.
    ///
    /// `qos` and `flags` are accepted and ignored, as for the event handler. Thread-safe; never
    /// blocks. Dispatch: `DispatchSourceProtocol.setRegistrationHandler(qos:flags:handler:)`.
    func setRegistrationHandler(qos: SQQoS, flags: SQWorkItemFlags, handler: SQSourceHandler?)

    /// Makes performing `handler` the registration handler (see
    /// ``setEventHandler(handler:)`` for how the item is performed and kept).
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceProtocol.setRegistrationHandler(handler:)`.
    func setRegistrationHandler(handler: SQWorkItem)

    /// Starts an inactive source; does nothing on one that is already active (also when called
    /// twice at once). A source that was suspended before activation starts once the suspensions
    /// are balanced.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.activate()`.
    func activate()

    /// Stops the source asynchronously: no event handler starts after this call returns; a
    /// running one finishes, then the cancel handler runs exactly once on the target queue (for
    /// a suspended source, once it is resumed). Idempotent.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.cancel()`.
    func cancel()

    /// Undoes one ``suspend()``. On an inactive source it activates it instead, as
    /// ``activate()`` does (code written for older Dispatch starts sources with `resume()`); use
    /// ``activate()`` to start a source and `resume()` only to balance a `suspend()`. Resuming an
    /// active source more often than it was suspended stops the process with a message.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.resume()`.
    func resume()

    /// Stops calling the event handler until a matching ``resume()``; events that arrive
    /// meanwhile coalesce into the data of the first handler call after it. Counted. No handler
    /// starts once `suspend()` has returned; a running one finishes. A suspended timer does not
    /// wake the process and counts the fires it missed.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.suspend()`.
    func suspend()

    /// What the source watches: the signal number, the descriptor or the process id it was
    /// made with; 0 for timers and user-data sources.
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProtocol.handle`.
    var handle: UInt { get }

    /// The event mask the source was made with (``SQSource/ProcessEvent`` or
    /// ``SQSource/FileSystemEvent`` bits); 0 for the other kinds.
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProtocol.mask` (which turns 0 after cancel; ours
    /// keeps the mask).
    var mask: UInt { get }

    /// Inside the event handler, what the current batch of events amounts to; outside it, what
    /// the last batch amounted to (0 before the first, and from the cancel handler on), as in
    /// Dispatch.
    ///
    /// - timer: the fires since the last handler call (more than 1 if it fell behind);
    /// - signal: the signals delivered since the last call;
    /// - read: the bytes available to read (an estimate; 0 at end of file or hang-up);
    /// - write: the room to write (an estimate; 1 if unknown);
    /// - process / file system: the events seen (``SQSourceProcess/data``,
    ///   ``SQSourceFileSystemObject/data`` give them as option sets);
    /// - user data: the sum, the OR, or the last value merged.
    ///
    /// Thread-safe. Dispatch: `DispatchSourceProtocol.data`.
    var data: UInt { get }

    /// Whether ``cancel()`` has been called.
    ///
    /// Thread-safe; never blocks. Dispatch: `DispatchSourceProtocol.isCancelled`.
    var isCancelled: Bool { get }
}
