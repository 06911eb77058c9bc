import CQueueCore

extension SQSourceProtocol {
    /// The source's events as an async sequence: each element is the ``data`` of one batch of
    /// events (a timer's fires, a signal count, the bytes readable, the merged user data...).
    ///
    /// ```swift
    /// let timer = SQSource.makeTimerSource(queue: queue)
    /// timer.schedule(deadline: .now(), repeating: .milliseconds(100))
    /// for await fires in timer.events {
    ///     print("tick", fires)
    ///     if done { break }  // ends the loop and cancels the timer
    /// }
    /// ```
    ///
    /// Iterating takes over the source: it sets the event handler (replacing any other) and
    /// activates the source, so leave the activation to it: events of a source you activate
    /// yourself before the loop starts (before its first `next()`, in another task) go to the
    /// handler the source had then, none by default, and are lost to the loop (a user-data
    /// source that counts to a total waits for ever), as they would be with a handler set after
    /// `activate()` in Dispatch. From each batch until the loop asks for the next one, the source
    /// is suspended, so events that arrive meanwhile coalesce in the source, as they do for a
    /// slow handler (a timer counts its fires, a user-data source merges): nothing is buffered
    /// without bound and nothing is lost. So an element of a read source is the bytes readable
    /// when it came, and none of them come again while the loop's body reads them; the next
    /// element counts what is left then. The cancel and registration handlers are left alone.
    ///
    /// The sequence ends (`next()` returns `nil`) when the source is cancelled, when its event
    /// handler is replaced (at its next event), or when the iterating task is cancelled. A source
    /// cancelled while you hold it suspended ends the sequence once you resume it (as its cancel
    /// handler waits for the resume, in Dispatch too). When the loop ends for any reason
    /// (`break`, `return`, a thrown error, task cancellation) the source is cancelled, as the
    /// iterator is freed: in a function or a task that is at the end of the loop; in top-level
    /// code (`main.swift`) Swift may keep the iterator longer, so cancel the source yourself
    /// there. Iterate a source from one loop at a time.
    ///
    /// Thread-safe; `next()` suspends without blocking a thread.
    public var events: SQSourceEvents<UInt> {
        SQSourceEvents(source: self) { $0 }
    }
}

extension SQSourceProcess {
    /// ``SQSourceProtocol/events`` with each batch as ``SQSource/ProcessEvent`` flags.
    public var events: SQSourceEvents<SQSource.ProcessEvent> {
        SQSourceEvents(source: self) { SQSource.ProcessEvent(rawValue: $0) }
    }
}

extension SQSourceFileSystemObject {
    /// ``SQSourceProtocol/events`` with each batch as ``SQSource/FileSystemEvent`` flags.
    public var events: SQSourceEvents<SQSource.FileSystemEvent> {
        SQSourceEvents(source: self) { SQSource.FileSystemEvent(rawValue: $0) }
    }
}

/// The events of a source as an `AsyncSequence` (see ``SQSourceProtocol/events``): one element
/// per batch of events, the batch's ``SQSourceProtocol/data`` as `Element`.
///
/// Sendable; iterate it from one loop at a time. Making an iterator installs the source's event
/// handler and activates it; the iterator cancels the source when it is dropped.
public struct SQSourceEvents<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never

    private let source: any SQSourceProtocol
    private let convert: @Sendable (UInt) -> Element

    internal init(source: any SQSourceProtocol, convert: @escaping @Sendable (UInt) -> Element) {
        self.source = source
        self.convert = convert
    }

    /// Takes over the source's event handler and activates the source.
    public func makeAsyncIterator() -> Iterator {
        let state = SQSourceEventState(source: source, convert: convert)
        // The handler holds the sentinel and the state; the source lets go of the handler
        // when it is cancelled, replaced or freed, and the sentinel then ends the sequence.
        let sentinel = SQSourceEventSentinel(state)
        source.setEventHandler(qos: .unspecified, flags: []) { [sentinel] in
            sentinel.state.deliver()
        }
        source.activate()
        // A source cancelled before the handler was set (by an earlier loop's end, or by
        // anyone) has let go of its handlers already and keeps this one: end the sequence here.
        // (If the cancel races with the lines above, both ends call finish, which is
        // idempotent.)
        if source.isCancelled {
            state.finish()
        }
        return Iterator(subscription: SQSourceEventSubscription(state))
    }

    /// Iterates a source's events. Dropping it (the end of a `for await` loop) cancels the
    /// source.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        public typealias Failure = Never

        private let subscription: SQSourceEventSubscription<Element>

        fileprivate init(subscription: SQSourceEventSubscription<Element>) {
            self.subscription = subscription
        }

        /// The next batch of events, or `nil` once the source is cancelled (or the task is:
        /// that cancels the source). Suspends without blocking a thread.
        public mutating func next() async -> Element? {
            await subscription.state.next()
        }

        /// As ``next()``; the isolation is not needed (the state is thread-safe).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await subscription.state.next()
        }
    }
}

/// Owned by the iterator only: when the loop ends, cancel the source.
private final class SQSourceEventSubscription<Element: Sendable>: Sendable {
    let state: SQSourceEventState<Element>

    init(_ state: SQSourceEventState<Element>) {
        self.state = state
    }

    deinit {
        state.stop()
    }
}

/// Captured by the event handler only: when the source lets go of the handler (cancelled,
/// replaced, freed), end the sequence.
private final class SQSourceEventSentinel<Element: Sendable>: Sendable {
    let state: SQSourceEventState<Element>

    init(_ state: SQSourceEventState<Element>) {
        self.state = state
    }

    deinit {
        state.finish()
    }
}

/// The hand-off between a source's event handler (on the source's queue, one call at a time)
/// and the task iterating its events. Every field lives in the mutex; the source's own calls
/// (`suspend`, `resume`, `cancel`) are made under it too, so that the "suspended by us" flag
/// always matches the source (the calls never block). Batches travel in the mutex, not through
/// the continuation (see `SQResumption` for why).
private final class SQSourceEventState<Element: Sendable>: @unchecked Sendable {
    private struct Inner {
        /// A batch the handler delivered while nobody waited; the source is suspended then.
        var pending: Element?
        /// A batch the handler handed to the waiting task.
        var handed: Element?
        var waiter: UnsafeContinuation<Void, Never>?
        /// The source is suspended by `deliver`, to be resumed by the next `next()`.
        var suspendedByUs = false
        /// No more batches: cancelled, handler released, or the loop ended.
        var finished = false
    }

    private let inner = SQLocked<Inner>.make(Inner())
    private let source: any SQSourceProtocol
    private let convert: @Sendable (UInt) -> Element

    init(source: any SQSourceProtocol, convert: @escaping @Sendable (UInt) -> Element) {
        self.source = source
        self.convert = convert
    }

    /// The event handler: suspends the source, then hands the batch to the waiting task or
    /// keeps it until the task asks for it. The source stays suspended until the loop asks for
    /// the batch after this one: its body has handled this one by then. (The source was
    /// suspended only while a batch waited for the loop, and resumed as the loop took it: a
    /// read source, which looks at its descriptor again after each handler, delivered the same
    /// bytes a second time while the body was about to read them, and a body that read what an
    /// element said then blocked for ever on a blocking descriptor, 5 runs in 6.)
    func deliver() {
        let batch = convert(source.data)
        let waiter = inner.withLock { inner -> UnsafeContinuation<Void, Never>? in
            if inner.finished {
                return nil
            }
            // No handler starts while the source is suspended, so it is not, and `pending`
            // and `handed` are empty.
            inner.suspendedByUs = true
            source.suspend()
            if let waiter = inner.waiter {
                inner.waiter = nil
                inner.handed = batch
                return waiter
            }
            inner.pending = batch
            return nil
        }
        waiter?.resume()
    }

    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let ready = inner.withLock { inner -> Bool in
                    if inner.pending != nil || inner.finished {
                        return true
                    }
                    // The body has handled the batch before: let the source deliver again.
                    if inner.suspendedByUs {
                        inner.suspendedByUs = false
                        source.resume()
                    }
                    inner.waiter = continuation
                    return false
                }
                if ready {
                    continuation.resume()
                }
            }
        } onCancel: {
            stop()
        }
        return inner.withLock { inner -> Element? in
            if let batch = inner.handed {
                inner.handed = nil
                return batch
            }
            if let batch = inner.pending {
                inner.pending = nil
                return batch
            }
            return nil  // finished
        }
    }

    /// The loop ended or its task was cancelled: cancel the source (first, so that no handler
    /// starts and suspends it again), resume it if we suspended it (a suspended source would
    /// never run its cancel handler, and dropping it would stop the process), and end the
    /// sequence.
    func stop() {
        let waiter = inner.withLock { inner -> UnsafeContinuation<Void, Never>? in
            if !inner.finished {
                inner.finished = true
                source.cancel()
            }
            return release(&inner)
        }
        waiter?.resume()
    }

    /// The source let go of the handler: no more batches.
    func finish() {
        let waiter = inner.withLock { inner -> UnsafeContinuation<Void, Never>? in
            inner.finished = true
            return release(&inner)
        }
        waiter?.resume()
    }

    /// Under the lock, once finished: gives the source back its suspension and takes the
    /// waiter to resume (it will find no batch handed to it).
    private func release(_ inner: inout Inner) -> UnsafeContinuation<Void, Never>? {
        if inner.suspendedByUs {
            inner.suspendedByUs = false
            source.resume()
        }
        let waiter = inner.waiter
        inner.waiter = nil
        return waiter
    }
}
