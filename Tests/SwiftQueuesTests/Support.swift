#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
import SwiftQueues
import Testing

/// Generous: only a lost work item or wake-up makes a wait this long. Tests never sleep; they
/// wait for events with this deadline.
func patience() -> SQTime {
    SQTime.now() + .seconds(60)
}

/// A bounded observation window, for a wait that must time out because the event must not
/// happen, used only where no event can prove the negative at a definite point (a suspended
/// queue runs nothing: nothing shows "never"). Where an event exists, wait on it instead, or let
/// the positive event record what it saw. A window can only miss a bug that shows late, never
/// fail because the machine is slow; a positive check must follow it.
func shortly() -> SQTime {
    SQTime.now() + .milliseconds(100)
}

/// A thread-safe integer counter.
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)

    init() {}

    /// Adds `delta`; returns the value before the addition.
    @discardableResult
    func add(_ delta: Int = 1) -> Int {
        storage.wrappingAdd(delta, ordering: .sequentiallyConsistent).oldValue
    }

    var value: Int {
        storage.load(ordering: .sequentiallyConsistent)
    }

    /// Raises the stored value to at least `candidate`.
    func raise(to candidate: Int) {
        var current = storage.load(ordering: .relaxed)
        while current < candidate {
            let (exchanged, original) = storage.compareExchange(
                expected: current, desired: candidate, ordering: .sequentiallyConsistent)
            if exchanged {
                return
            }
            current = original
        }
    }
}

/// A value behind a `pthread_mutex_t`, for tests' shared state. (Not the standard library's
/// `Mutex`: its contended path hands the lock over where ThreadSanitizer cannot see it, and
/// `swift test --sanitize=thread` then reports races between its critical sections.)
final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// Whether the process runs under ThreadSanitizer (its runtime is linked in).
let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// A thread-safe append-only log.
final class Log<Element: Sendable>: Sendable {
    private let storage = Locked<[Element]>([])

    init() {}

    func append(_ element: Element) {
        storage.withLock { $0.append(element) }
    }

    var values: [Element] {
        storage.withLock { $0 }
    }
}

/// Tracks how many callers are inside a region at once, and the most ever seen.
final class Occupancy: Sendable {
    private let inside = Counter()
    let peak = Counter()

    init() {}

    func enter() {
        peak.raise(to: inside.add() + 1)
    }

    func exit() {
        inside.add(-1)
    }

    /// Runs `body` inside the region.
    func during<T>(_ body: () throws -> T) rethrows -> T {
        enter()
        defer { exit() }
        return try body()
    }
}

struct TestError: Error, Equatable {
    let code: Int
}

/// An object that signals a semaphore when it is freed, to observe releases without sleeping.
final class DeinitSignal: Sendable {
    let semaphore: SQSemaphore
    let tag: Int

    init(_ semaphore: SQSemaphore, tag: Int = 0) {
        self.semaphore = semaphore
        self.tag = tag
    }

    deinit {
        semaphore.signal()
    }
}

/// A little CPU work, to widen the window in which an exclusion violation could be seen.
@inline(never)
func busyWork() {
    var x: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<200 {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
    }
    busyWorkSink.store(x, ordering: .relaxed)
}

private let busyWorkSink = Atomic<UInt64>(0)

/// Runs one work item on `first` and one on `second`; each signals the other and then waits for
/// the other's signal. Returns how many met: 2 only if the two items ran at the same time (a
/// queue that ran them one after the other makes the first wait time out).
func meetingCount(on first: SQQueue, and second: SQQueue) -> Int {
    let toFirst = SQSemaphore(value: 0)
    let toSecond = SQSemaphore(value: 0)
    let met = Counter()
    let group = SQGroup()
    first.async(group: group) {
        toSecond.signal()
        if toFirst.wait(timeout: patience()) == .success { met.add() }
    }
    second.async(group: group) {
        toFirst.signal()
        if toSecond.wait(timeout: patience()) == .success { met.add() }
    }
    #expect(group.wait(timeout: patience()) == .success)
    return met.value
}
