import SwiftQueues
import Testing

/// What every source shares: handlers (set, replaced, removed, released), registration,
/// activation, cancellation, and the lifetime of sources whose handlers capture them.
@Suite struct SourceLifecycleTests {
    /// A barrier event handler (the `.barrier` flag, or a barrier work item) on a concurrent
    /// queue runs alone there, as Dispatch runs it: not beside a task already running (found
    /// by a user-side probe: the flag was ignored).
    @Test(arguments: [false, true]) func testBarrierHandlerRunsAlone(workItem: Bool) {
        let queue = SQQueue(label: "barrier-handler", attributes: .concurrent)
        let running = Counter()
        let overlaps = Counter()
        let handled = SQSemaphore(value: 0)
        let taskStarted = SQSemaphore(value: 0)
        let handlerRan = SQSemaphore(value: 0)
        let source = SQSource.makeUserDataAddSource(queue: queue)
        let body: @Sendable () -> Void = {
            if running.value != 0 { overlaps.add() }
            handlerRan.signal()
            handled.signal()
        }
        if workItem {
            source.setEventHandler(handler: SQWorkItem(flags: .barrier, block: body))
        } else {
            source.setEventHandler(qos: .unspecified, flags: .barrier, handler: body)
        }
        source.activate()
        queue.async {
            running.add()
            taskStarted.signal()
            // Long enough for a handler that ignored the barrier to run beside us.
            _ = handlerRan.wait(timeout: shortly())
            running.add(-1)
        }
        #expect(taskStarted.wait(timeout: patience()) == .success)
        source.add(data: 1)
        #expect(handled.wait(timeout: patience()) == .success)
        #expect(overlaps.value == 0)
        source.cancel()
    }

    @Test func testTimerCapturingItselfIsFreedAfterCancel() {
        let q = SQQueue(label: "cycle-timer")
        let cancelled = SQSemaphore(value: 0)
        let go = Counter()
        weak var weakTimer: (any SQSourceTimer)?
        do {
            let timer = SQSource.makeTimerSource(queue: q)
            weakTimer = timer
            let fires = Counter()
            timer.schedule(deadline: .now(), repeating: .milliseconds(1))
            timer.setEventHandler {
                // The handler holds its own source strongly: a cycle until the cancel.
                if go.value != 0 && fires.add(Int(timer.data)) + Int(timer.data) >= 3 {
                    timer.cancel()
                }
            }
            timer.setCancelHandler {
                _ = timer.isCancelled
                cancelled.signal()
            }
            timer.activate()
        }
        #expect(weakTimer != nil)  // alive through its handlers only
        go.add()
        #expect(cancelled.wait(timeout: patience()) == .success)
        // The cancel handler ran in the source's item on q; the handlers are released right
        // after it, in the same item, before q runs anything else.
        q.sync {}
        #expect(weakTimer == nil)
    }

    @Test func testUserDataSourceCapturingItselfIsFreedAfterCancel() {
        let q = SQQueue(label: "cycle-data")
        let cancelled = SQSemaphore(value: 0)
        weak var weakSource: (any SQSourceUserDataAdd)?
        do {
            let source = SQSource.makeUserDataAddSource(queue: q)
            weakSource = source
            source.setEventHandler { source.cancel() }
            source.setRegistrationHandler { source.add(data: 1) }
            source.setCancelHandler {
                _ = source.isCancelled
                cancelled.signal()
            }
            source.activate()
        }
        #expect(cancelled.wait(timeout: patience()) == .success)
        q.sync {}
        #expect(weakSource == nil)
    }

    @Test func testDroppingAnActiveSourceStopsItWithoutItsCancelHandler() {
        // As Dispatch: the last reference to a source that was not cancelled stops it and
        // releases its handlers; its cancel handler does not run.
        let q = SQQueue(label: "dropped")
        let released = SQSemaphore(value: 0)
        let cancelRan = Counter()
        let fired = SQSemaphore(value: 0)
        do {
            let timer = SQSource.makeTimerSource(queue: q)
            let token = DeinitSignal(released)
            timer.schedule(deadline: .now(), repeating: .milliseconds(1))
            timer.setEventHandler {
                _ = token
                fired.signal()
            }
            timer.setCancelHandler { cancelRan.add() }
            timer.activate()
            #expect(fired.wait(timeout: patience()) == .success)
        }
        #expect(released.wait(timeout: patience()) == .success)
        q.sync {}
        #expect(cancelRan.value == 0)
    }

    @Test func testInactiveSourceDroppedReleasesItsHandlers() {
        let released = SQSemaphore(value: 0)
        do {
            let source = SQSource.makeUserDataOrSource()
            let token = DeinitSignal(released)
            source.setEventHandler { _ = token }
        }
        #expect(released.wait(timeout: patience()) == .success)
    }

    @Test func testRegistrationRunsOnceBeforeEvents() {
        let q = SQQueue(label: "registration")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let registrations = Counter()
        let eventsBeforeRegistration = Counter()
        let done = SQSemaphore(value: 0)
        source.setRegistrationHandler { registrations.add() }
        source.setEventHandler {
            if registrations.value == 0 { eventsBeforeRegistration.add() }
            done.signal()
        }
        source.add(data: 1)  // before activation: waits for it
        source.activate()
        source.activate()  // a second activate does nothing
        #expect(done.wait(timeout: patience()) == .success)
        source.add(data: 1)
        #expect(done.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(registrations.value == 1)
        #expect(eventsBeforeRegistration.value == 0)
    }

    @Test func testRegistrationHandlerSetLateRunsOnce() {
        // Dispatch: a registration handler set on a source already registered runs at once.
        let q = SQQueue(label: "registration-late")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let event = SQSemaphore(value: 0)
        let registered = SQSemaphore(value: 0)
        let registrations = Counter()
        source.setEventHandler { event.signal() }
        source.activate()
        source.add(data: 1)
        #expect(event.wait(timeout: patience()) == .success)  // registered by now
        source.setRegistrationHandler {
            registrations.add()
            registered.signal()
        }
        #expect(registered.wait(timeout: patience()) == .success)
        source.add(data: 1)
        #expect(event.wait(timeout: patience()) == .success)
        #expect(registered.wait(timeout: shortly()) == .timedOut)  // once only
        #expect(registrations.value == 1)
        source.cancel()
    }

    @Test func testCancelBeforeActivationRunsOnlyTheCancelHandler() {
        let q = SQQueue(label: "cancel-inactive")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let others = Counter()
        let cancelled = SQSemaphore(value: 0)
        source.setRegistrationHandler { others.add() }
        source.setEventHandler { others.add() }
        source.setCancelHandler { cancelled.signal() }
        source.add(data: 1)
        source.cancel()
        source.cancel()  // idempotent
        #expect(source.isCancelled)
        source.activate()
        #expect(cancelled.wait(timeout: patience()) == .success)
        q.sync {}
        #expect(others.value == 0)
    }

    @Test func testReplacedAndRemovedHandlers() {
        let q = SQQueue(label: "replace-handler")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let firstCalls = Counter()
        let firstReleased = SQSemaphore(value: 0)
        let firstRan = SQSemaphore(value: 0)
        do {
            let token = DeinitSignal(firstReleased)
            source.setEventHandler {
                _ = token
                firstCalls.add()
                firstRan.signal()
            }
        }
        source.activate()
        source.add(data: 1)
        #expect(firstRan.wait(timeout: patience()) == .success)
        // Removed: the next event finds no handler.
        source.setEventHandler(handler: nil)
        source.add(data: 1)
        q.sync {}
        // Replaced: the new handler sees later events; the old closure is released.
        let secondData = Log<UInt>()
        let secondRan = SQSemaphore(value: 0)
        source.setEventHandler(qos: .userInitiated, flags: .barrier) {
            secondData.append(source.data)
            secondRan.signal()
        }
        source.add(data: 5)
        #expect(secondRan.wait(timeout: patience()) == .success)
        #expect(firstReleased.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(firstCalls.value == 1)
        #expect(secondData.values.count == 1)
        // The add made while no handler was set may have been merged into the next call.
        #expect(secondData.values[0] == 5 || secondData.values[0] == 6)
    }

    @Test func testHandlerSetterShapes() {
        // Every Dispatch spelling of the setters compiles and takes effect.
        let q = SQQueue(label: "setter-shapes")
        let source: any SQSourceUserDataAdd = SQSource.makeUserDataAddSource(queue: q)
        let log = Log<String>()
        let cancelled = SQSemaphore(value: 0)
        source.setRegistrationHandler(qos: .userInitiated) { log.append("registration") }
        source.setEventHandler(flags: []) { log.append("event") }
        source.setCancelHandler(qos: .unspecified, flags: []) {
            log.append("cancel")
            cancelled.signal()
        }
        source.setRegistrationHandler(
            qos: .unspecified, flags: [],
            handler: {
                log.append("registration 2")
            })
        source.activate()
        source.add(data: 1)
        q.sync {}
        source.cancel()
        #expect(cancelled.wait(timeout: patience()) == .success)
        let values = log.values
        #expect(values.first == "registration 2")
        #expect(values.last == "cancel")
        #expect(!values.contains("registration"))
    }

    @Test func testSourcesAreDistinctKinds() {
        let timer: any SQSourceProtocol = SQSource.makeTimerSource()
        let adder: any SQSourceProtocol = SQSource.makeUserDataAddSource()
        #expect(timer is any SQSourceTimer)
        #expect(!(timer is any SQSourceUserDataAdd))
        #expect(!(adder is any SQSourceTimer))
        #expect(adder is SQSource)
    }
}
