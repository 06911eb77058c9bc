import CQueueCore
import Synchronization

/// The retained context of a C callback: ``sqFireCallback`` calls ``fire()`` exactly once and
/// releases it. Subclasses say what firing does. Not public API.
internal class SQCallback: @unchecked Sendable {
    func fire() {}

    /// Whether firing would do nothing any more (its waiter was cancelled): a registration of
    /// it may be dropped instead (see `SQGroup.noteAbandonedWait`). Only reads.
    var isAbandoned: Bool { false }

    /// `self` as the retained context of one C callback that ``sqFireCallback`` consumes.
    final func retainedContext() -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(self).toOpaque()
    }
}

/// The C trampoline for ``SQCallback`` contexts.
internal let sqFireCallback: cq_function_t = { context in
    // safety: `context` came from `retainedContext()` of a callback submitted exactly once.
    Unmanaged<SQCallback>.fromOpaque(context!).takeRetainedValue().fire()
}

/// A one-shot hand-off of a value from C code (a queue, a group's notify, ...) to one awaiting
/// task, which may be cancelled meanwhile: whichever comes first, the value or the cancellation,
/// resumes the task (with the value, or with `nil`), and the other finds nothing to do.
///
/// The state word: `idle` → `waiting` (``wait(start:)`` installed the continuation) →
/// `claimed` (``claim()``: the producer has started and will ``finish(_:)``) → `done`; or
/// `idle`/`waiting` → `cancelled` (``cancel()``). Each transition is one atomic operation:
///   - `continuation` is written by the task before its release CAS idle → waiting, and read by
///     whoever moves the state out of `waiting` with an acquire CAS (claim, cancel);
///   - `value` is written by the producer before its release store of `done`, and read by the
///     task after it is resumed, with an acquire load of the state.
/// The value does not travel through the continuation (which carries nothing): a continuation
/// resumed before its task reaches the await is synchronised inside the Swift runtime by an
/// atomic that ThreadSanitizer does not see, and a value written through it would show as a
/// false data race; these atomics are compiled into this module, so the sanitizer sees them.
internal class SQResumption<Value: Sendable>: SQCallback, @unchecked Sendable {
    private static var idle: UInt8 { 0 }
    private static var waiting: UInt8 { 1 }
    private static var claimed: UInt8 { 2 }
    private static var done: UInt8 { 3 }
    private static var cancelled: UInt8 { 4 }

    private let state = Atomic<UInt8>(0)
    private var continuation: UnsafeContinuation<Void, Never>?
    private var value: Value?

    /// Suspends until the producer finishes with a value, or the task is cancelled (`nil`).
    /// `start` runs once the continuation is installed, unless the task was already cancelled:
    /// it hands the producer its part (submits the work, registers the notify).
    final func wait(start: () -> Void) async -> Value? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                self.continuation = continuation
                // release: publishes `continuation` to claim()/cancel()'s acquire CAS.
                let (installed, _) = state.compareExchange(
                    expected: Self.idle, desired: Self.waiting, successOrdering: .releasing,
                    failureOrdering: .relaxed)
                if installed {
                    start()
                } else {
                    continuation.resume()  // cancelled first
                }
            }
        } onCancel: {
            cancel()
        }
        // acquire: pairs with finish()'s release store of `done`.
        if state.load(ordering: .acquiring) == Self.done {
            return value
        }
        return nil
    }

    /// The producer's side, before it produces the value: `true` if the waiter still wants
    /// it (then ``finish(_:)`` must follow), `false` if it was cancelled (then work that would
    /// produce the value may be skipped).
    final func claim() -> Bool {
        // acquire: pairs with wait()'s release CAS (we will read `continuation`).
        state.compareExchange(
            expected: Self.waiting, desired: Self.claimed, successOrdering: .acquiring,
            failureOrdering: .relaxed
        ).exchanged
    }

    /// Hands the value over after a successful ``claim()`` and resumes the task.
    final func finish(_ value: Value) {
        self.value = value
        let continuation = self.continuation!
        // release: pairs with wait()'s acquire load after the resumption.
        state.store(Self.done, ordering: .releasing)
        continuation.resume()
    }

    /// Cancelled before the value was claimed: firing would do nothing (a cancelled state is
    /// final, so a relaxed load is enough).
    override final var isAbandoned: Bool {
        state.load(ordering: .relaxed) == Self.cancelled
    }

    /// The awaiting task was cancelled: resume it with `nil` unless the value was claimed.
    final func cancel() {
        if state.compareExchange(
            expected: Self.idle, desired: Self.cancelled, ordering: .relaxed
        ).exchanged {
            return  // wait() sees it and resumes at once
        }
        // acquire: pairs with wait()'s release CAS (we read `continuation`).
        if state.compareExchange(
            expected: Self.waiting, desired: Self.cancelled, successOrdering: .acquiring,
            failureOrdering: .relaxed
        ).exchanged {
            continuation!.resume()
        }
    }
}

/// A resumption fired by a C notification that carries no value (a group's or a work item's
/// notify).
internal final class SQNotifyResumption: SQResumption<Void>, @unchecked Sendable {
    override func fire() {
        if claim() {
            finish(())
        }
    }
}
