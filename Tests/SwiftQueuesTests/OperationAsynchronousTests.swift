import Synchronization
import SwiftQueues
import Testing

/// An asynchronous operation written exactly as Apple's Concurrency Programming Guide shows
/// ("Configuring Operations for Concurrent Execution"): its own executing and finished state,
/// `start()` overridden, and KVO notifications around every change.
final class GuideStyleOperation: SQOperation, @unchecked Sendable {
    private let lock = Locked<(executing: Bool, finished: Bool)>((false, false))
    let work: @Sendable (GuideStyleOperation) -> Void
    let ran = Counter()

    init(work: @escaping @Sendable (GuideStyleOperation) -> Void) {
        self.work = work
        super.init()
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { $0.executing } }
    override var isFinished: Bool { lock.withLock { $0.finished } }

    override func start() {
        // Always check for cancellation before launching the task.
        if isCancelled {
            willChangeValue(forKey: "isFinished")
            lock.withLock { $0.finished = true }
            didChangeValue(forKey: "isFinished")
            return
        }
        // Launch the work on another thread and return.
        willChangeValue(forKey: "isExecuting")
        lock.withLock { $0.executing = true }
        didChangeValue(forKey: "isExecuting")
        SQQueue.global().async { self.main() }
    }

    override func main() {
        ran.add()
        work(self)
    }

    func completeOperation() {
        willChangeValue(forKey: "isFinished")
        willChangeValue(forKey: "isExecuting")
        lock.withLock {
            $0.executing = false
            $0.finished = true
        }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// The same with the key-path forms and settable overrides, as many Swift code bases write it.
class KeyPathAsyncOperation: SQOperation, @unchecked Sendable {
    private let flags = Locked<(executing: Bool, finished: Bool)>((false, false))

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool {
        get { flags.withLock { $0.executing } }
        set {
            willChangeValue(for: \.isExecuting)
            flags.withLock { $0.executing = newValue }
            didChangeValue(for: \.isExecuting)
        }
    }
    override var isFinished: Bool {
        get { flags.withLock { $0.finished } }
        set {
            willChangeValue(for: \.isFinished)
            flags.withLock { $0.finished = newValue }
            didChangeValue(for: \.isFinished)
        }
    }

    override func start() {
        guard !isCancelled else {
            isFinished = true
            return
        }
        isExecuting = true
        main()
    }

    func finishOperation() {
        isExecuting = false
        isFinished = true
    }
}

/// Finishes when `release` is signalled, on another thread, through the key-path forms.
final class ReleasedKeyPathOperation: KeyPathAsyncOperation, @unchecked Sendable {
    let release: SQSemaphore
    let started = SQSemaphore(value: 0)
    init(release: SQSemaphore) { self.release = release }
    override func main() {
        started.signal()
        SQQueue.global().async {
            _ = self.release.wait(timeout: patience())
            self.finishOperation()
        }
    }
}

/// An asynchronous operation the simple way: `main(finish:)` and no state of its own.
final class FinisherOperation: SQOperation, @unchecked Sendable {
    let release: SQSemaphore
    let started = SQSemaphore(value: 0)
    init(release: SQSemaphore) { self.release = release }
    override func main(finish: SQOperation.Finisher) {
        started.signal()
        SQQueue.global().async {
            _ = self.release.wait(timeout: patience())
            finish()
            finish()  // a second call does nothing
        }
    }
}

/// An operation with a readiness condition of its own, announced with KVO.
final class GatedOperation: SQOperation, @unchecked Sendable {
    private let open = Atomic<Bool>(false)
    let runs = Counter()
    override var isReady: Bool { super.isReady && open.load(ordering: .acquiring) }
    func openGate() {
        willChangeValue(forKey: "isReady")
        open.store(true, ordering: .releasing)
        didChangeValue(forKey: "isReady")
    }
    override func main() { runs.add() }
}

/// An operation whose start() hops onto a serial queue of its own, asynchronously, and
/// calls super.start() from there: a common way to make an operation run on a given queue.
final class HoppingOperation: SQOperation, @unchecked Sendable {
    static let key = SQSpecificKey<Int>()
    static let hop: SQQueue = {
        let queue = SQQueue(label: "hop")
        queue.setSpecific(key: key, value: 1)
        return queue
    }()
    let ranOnHop = Counter()
    let queueInMain = Locked<SQOperationQueue?>(nil)

    override func start() {
        if SQQueue.getSpecific(key: Self.key) == nil {
            Self.hop.async { self.start() }
            return
        }
        super.start()
    }

    override func main() {
        if SQQueue.getSpecific(key: Self.key) == 1 {
            ranOnHop.add()
        }
        queueInMain.withLock { $0 = SQOperationQueue.current }
    }
}

/// Asynchronous operations: the guide's KVO style and the Finisher (issue 12).
@Suite struct OperationAsynchronousTests {
    /// start() overridden to call super.start() later, from another queue: the queue started
    /// the operation, so this is the queue's start (it stopped the process as a start by hand
    /// of a queued operation; found by a user-side probe, Foundation runs it).
    @Test func testOverriddenStartCallingSuperFromAnotherQueue() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let hopping = HoppingOperation()
        let completions = Counter()
        hopping.completionBlock = { completions.add() }
        let dependent = RecordingOperation("dependent")
        dependent.addDependency(hopping)
        let next = RecordingOperation("next")
        queue.addOperations([hopping, dependent, next], waitUntilFinished: false)
        #expect(finishes(dependent))
        #expect(empties(queue))
        #expect(hopping.ranOnHop.value == 1 && completions.value == 1)
        #expect(hopping.queueInMain.withLock { $0 } === queue)
        #expect(dependent.runs.value == 1 && next.runs.value == 1)
    }

    @Test func testGuideStyleOperationHoldsItsSlotAndReleasesDependents() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let started = SQSemaphore(value: 0)
        let guide = GuideStyleOperation { operation in
            started.signal()
            _ = release.wait(timeout: patience())
            operation.completeOperation()
        }
        let completions = Counter()
        guide.completionBlock = { completions.add() }
        let dependent = RecordingOperation("dependent")
        dependent.addDependency(guide)
        let unrelated = RecordingOperation("unrelated")
        queue.addOperations([guide, unrelated, dependent], waitUntilFinished: false)
        #expect(arrived(started))
        // start() has returned, but the operation still executes: it keeps the only slot.
        #expect(guide.isExecuting && !guide.isFinished)
        #expect(unrelated.started.wait(timeout: shortly()) == .timedOut)
        release.signal()
        #expect(empties(queue))
        #expect(guide.isFinished && completions.value == 1)
        #expect(unrelated.runs.value == 1 && dependent.runs.value == 1)
    }

    @Test func testGuideStyleCancelledBeforeStart() {
        let queue = SQOperationQueue()
        let guide = GuideStyleOperation { $0.completeOperation() }
        let completions = Counter()
        guide.completionBlock = { completions.add() }
        guide.cancel()
        let returned = completes { queue.addOperations([guide], waitUntilFinished: true) }
        #expect(returned)
        #expect(guide.ran.value == 0 && guide.isFinished && completions.value == 1)
    }

    @Test func testGuideStyleStartedManually() {
        let done = SQSemaphore(value: 0)
        let guide = GuideStyleOperation { $0.completeOperation() }
        guide.completionBlock = { done.signal() }
        guide.start()
        #expect(arrived(done))
        #expect(finishes(guide))
        #expect(guide.isFinished && guide.ran.value == 1)
    }

    @Test func testKeyPathStyleOperationWorks() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let first = ReleasedKeyPathOperation(release: release)
        let second = RecordingOperation("second")
        second.addDependency(first)
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(arrived(first.started))
        #expect(first.isExecuting)
        release.signal()
        #expect(finishes(second))
        #expect(first.isFinished && second.runs.value == 1)
    }

    @Test func testFinisherOperation() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = SQSemaphore(value: 0)
        let asynchronous = FinisherOperation(release: release)
        let completions = Counter()
        asynchronous.completionBlock = { completions.add() }
        let next = RecordingOperation("next")
        queue.addOperations([asynchronous, next], waitUntilFinished: false)
        #expect(arrived(asynchronous.started))
        #expect(asynchronous.isExecuting && !asynchronous.isFinished)
        #expect(next.started.wait(timeout: shortly()) == .timedOut)  // the slot is held
        release.signal()
        #expect(empties(queue))
        #expect(asynchronous.isFinished && !asynchronous.isExecuting)
        #expect(completions.value == 1 && next.runs.value == 1)
    }

    @Test func testFinisherStartedManuallyReturnsBeforeFinishing() {
        let release = SQSemaphore(value: 0)
        let asynchronous = FinisherOperation(release: release)
        asynchronous.start()
        #expect(asynchronous.isExecuting)
        release.signal()
        #expect(finishes(asynchronous))
        #expect(asynchronous.isFinished)
    }

    @Test func testOverriddenReadinessAnnouncedWithKVO() {
        let queue = SQOperationQueue()
        let gated = GatedOperation()
        let after = RecordingOperation("after")
        after.addDependency(gated)
        queue.addOperations([gated, after], waitUntilFinished: false)
        #expect(!gated.isReady)
        #expect(after.started.wait(timeout: shortly()) == .timedOut)
        #expect(gated.runs.value == 0)
        gated.openGate()
        #expect(finishes(after))
        #expect(gated.runs.value == 1 && after.runs.value == 1)
    }

    @Test func testManyGuideStyleOperationsUnderALimit() {
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 2
        let occupancy = Occupancy()
        var operations: [SQOperation] = []
        for _ in 0..<100 {
            operations.append(
                GuideStyleOperation { operation in
                    occupancy.during { busyWork() }
                    operation.completeOperation()
                })
        }
        // The occupancy counts the work; the queue counts the operation from start() to its
        // finish, which contains it, so the peak cannot exceed the limit either.
        let returned = completes { [operations] in
            queue.addOperations(operations, waitUntilFinished: true)
        }
        #expect(returned)
        #expect(occupancy.peak.value <= 2)
        #expect(operations.allSatisfy { $0.isFinished })
    }
}
