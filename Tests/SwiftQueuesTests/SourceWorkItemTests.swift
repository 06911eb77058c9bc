import SwiftQueues
import Testing

/// Work items as source handlers: performed per event, finishing on the first run; a
/// cancelled item is skipped; the source releases them.
@Suite struct SourceWorkItemTests {
    @Test func testWorkItemHandlers() {
        let q = SQQueue(label: "work-item-handlers")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let log = Log<String>()
        let registration = SQWorkItem { log.append("registration") }
        let event = SQWorkItem { log.append("event \(source.data)") }
        let cancel = SQWorkItem { log.append("cancel") }
        source.setRegistrationHandler(handler: registration)
        source.setEventHandler(handler: event)
        source.setCancelHandler(handler: cancel)
        source.activate()
        #expect(registration.wait(timeout: patience()) == .success)
        source.add(data: 2)
        #expect(event.wait(timeout: patience()) == .success)  // the first run finishes it
        source.add(data: 3)
        source.cancel()
        #expect(cancel.wait(timeout: patience()) == .success)
        let values = log.values
        #expect(values.first == "registration")
        #expect(values.dropFirst().first == "event 2")
        #expect(values.last == "cancel")
        #expect(values.count == 3 || values == ["registration", "event 2", "event 3", "cancel"])
    }

    @Test func testCancelledWorkItemIsNotRun() {
        let q = SQQueue(label: "work-item-cancelled")
        let source = SQSource.makeUserDataAddSource(queue: q)
        let ran = Counter()
        let item = SQWorkItem { ran.add() }
        item.cancel()
        let registered = SQSemaphore(value: 0)
        source.setRegistrationHandler { registered.signal() }
        source.setEventHandler(handler: item)
        source.activate()
        #expect(registered.wait(timeout: patience()) == .success)
        q.sync {}  // the source's registration run is over: the next add schedules a new one
        source.add(data: 1)
        q.sync {}  // ... which has handled that event with the cancelled item
        let later = Log<UInt>()
        let laterRan = SQSemaphore(value: 0)
        source.setEventHandler {
            later.append(source.data)
            laterRan.signal()
        }
        source.add(data: 1)
        #expect(laterRan.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(later.values == [1])  // the first event was not left for this handler
        #expect(ran.value == 0)
        #expect(item.wait(timeout: SQTime.now()) == .success)  // finished by its cancel
    }

    @Test func testSourceReleasesItsWorkItems() {
        let q = SQQueue(label: "work-item-released")
        let released = SQSemaphore(value: 0)
        let cancelled = SQSemaphore(value: 0)
        let source = SQSource.makeUserDataAddSource(queue: q)
        do {
            let token = DeinitSignal(released)
            source.setEventHandler(handler: SQWorkItem { _ = token })
        }
        source.setCancelHandler { cancelled.signal() }
        source.activate()
        source.cancel()
        #expect(cancelled.wait(timeout: patience()) == .success)
        // The source let go of the item after its cancel handler; the item's closure goes
        // with the C item.
        #expect(released.wait(timeout: patience()) == .success)
    }
}
