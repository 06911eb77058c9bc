import Dispatch
import Foundation
import SwiftQueues
import Testing

/// Dispatch's sources and ours in one file that imports Foundation, Dispatch and SwiftQueues:
/// the same code with the names renamed, side by side.
@Suite struct SourceCoexistenceTests {
    @Test func testTimerPortedByRenaming() {
        let dispatchFired = DispatchSemaphore(value: 0)
        let dispatchQueue = DispatchQueue(label: "dispatch-timer")
        let dispatchTimer: any DispatchSourceTimer = DispatchSource.makeTimerSource(
            flags: [], queue: dispatchQueue)
        dispatchTimer.schedule(
            deadline: .now(), repeating: .milliseconds(1), leeway: .nanoseconds(0))
        dispatchTimer.setEventHandler(qos: .unspecified, flags: []) { dispatchFired.signal() }
        dispatchTimer.activate()

        let fired = SQSemaphore(value: 0)
        let queue = SQQueue(label: "sq-timer")
        let timer: any SQSourceTimer = SQSource.makeTimerSource(flags: [], queue: queue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(1), leeway: .nanoseconds(0))
        timer.setEventHandler(qos: .unspecified, flags: []) { fired.signal() }
        timer.activate()

        #expect(dispatchFired.wait(timeout: .now() + 60) == .success)
        #expect(fired.wait(timeout: .now() + 60) == .success)
        dispatchTimer.cancel()
        timer.cancel()
        #expect(dispatchTimer.isCancelled && timer.isCancelled)
    }

    @Test func testUserDataPortedByRenaming() throws {
        let dispatchSource = DispatchSource.makeUserDataAddSource(queue: .global())
        let source = SQSource.makeUserDataAddSource(queue: .global())
        let dispatchDone = DispatchSemaphore(value: 0)
        let done = SQSemaphore(value: 0)
        let dispatchSum = Counter()
        let sum = Counter()
        dispatchSource.setEventHandler {
            if dispatchSum.add(Int(dispatchSource.data)) + Int(dispatchSource.data) == 10 {
                dispatchDone.signal()
            }
        }
        source.setEventHandler {
            if sum.add(Int(source.data)) + Int(source.data) == 10 { done.signal() }
        }
        dispatchSource.activate()
        source.activate()
        for _ in 0..<10 {
            dispatchSource.add(data: 1)
            source.add(data: 1)
        }
        #expect(dispatchDone.wait(timeout: .now() + 60) == .success)
        #expect(done.wait(timeout: .now() + 60) == .success)
        dispatchSource.cancel()
        source.cancel()
        // Our read source throws where Dispatch's would trap: the same call, with `try`.
        #expect(throws: SQSourceError.self) {
            _ = try SQSource.makeReadSource(fileDescriptor: -1, queue: nil)
        }
    }
}
