import Dispatch
import Foundation
import SwiftQueues
import Testing

/// A file that imports Dispatch, Foundation (which re-exports Dispatch on Linux) and
/// SwiftQueues: no name collides, the same member names and labels work on both, and both
/// runtimes work side by side.
@Suite struct FoundationCoexistenceTests {
    @Test func testFoundationAndDispatchCoexist() {
        let dispatchQueue = DispatchQueue(label: "dispatch", attributes: .concurrent)
        let sqQueue = SQQueue(label: "swiftqueues", attributes: .concurrent)
        let dispatchGroup = DispatchGroup()
        let sqGroup = SQGroup()
        let counter = Counter()

        // Dispatch work that submits to SwiftQueues, and the other way round.
        for _ in 0..<100 {
            dispatchQueue.async(group: dispatchGroup) {
                sqQueue.async(group: sqGroup) { counter.add() }
            }
            sqQueue.async(group: sqGroup) {
                dispatchQueue.async(group: dispatchGroup) { counter.add() }
            }
        }
        // Both groups must drain; a Dispatch item may still be adding to the SQ group, so wait
        // for Dispatch first, then for SwiftQueues, then Dispatch again.
        #expect(dispatchGroup.wait(timeout: .now() + 60) == .success)
        #expect(sqGroup.wait(timeout: patience()) == .success)
        #expect(dispatchGroup.wait(timeout: DispatchTime.now() + 60) == .success)
        #expect(counter.value == 200)
    }

    @Test func testSemaphoresAcrossRuntimes() {
        let dispatchSemaphore = DispatchSemaphore(value: 0)
        let sqSemaphore = SQSemaphore(value: 0)
        SQQueue.global().async { dispatchSemaphore.signal() }
        DispatchQueue.global().async { sqSemaphore.signal() }
        #expect(dispatchSemaphore.wait(timeout: .now() + 60) == .success)
        #expect(sqSemaphore.wait(timeout: SQTime.now() + 60) == .success)
        // The two timeout enums are distinct types with the same cases.
        let dispatchResult: DispatchTimeoutResult = dispatchSemaphore.wait(timeout: .now())
        let sqResult: SQTimeoutResult = sqSemaphore.wait(timeout: .now())
        #expect(dispatchResult == .timedOut)
        #expect(sqResult == .timedOut)
    }

    @Test func testFoundationTypesInsideSQWork() {
        let q = SQQueue(label: "foundation")
        let formatted = q.sync { () -> String in
            let date = Date(timeIntervalSince1970: 0)
            let text = String(format: "%04d-%@", 42, "x")
            return "\(text) \(date.timeIntervalSince1970) \(UUID().uuidString.count)"
        }
        #expect(formatted == "0042-x 0.0 36")
        let delay: TimeInterval = 0.001  // Foundation's TimeInterval next to SQTimeInterval
        let interval: SQTimeInterval = .milliseconds(1)
        let now = SQTime.now()
        #expect(now + delay == now + interval)
        #expect((now + delay).uptimeNanoseconds == now.uptimeNanoseconds + 1_000_000)
        let dispatchInterval: DispatchTimeInterval = .milliseconds(1)
        #expect(dispatchInterval == .microseconds(1_000))
    }

    @Test func testDispatchSyncInsideSQSync() {
        let dq = DispatchQueue(label: "inner-dispatch")
        let sq = SQQueue(label: "outer-sq")
        let key = DispatchSpecificKey<Int>()
        let sqKey = SQSpecificKey<Int>()
        dq.setSpecific(key: key, value: 1)
        sq.setSpecific(key: sqKey, value: 2)
        let seen = sq.sync { () -> [Int?] in
            let inner = dq.sync { [DispatchQueue.getSpecific(key: key), SQQueue.getSpecific(key: sqKey)] }
            return inner + [SQQueue.getSpecific(key: sqKey)]
        }
        #expect(seen == [1, 2, 2])
        dispatchPrecondition(condition: .notOnQueue(dq))
        sqPrecondition(condition: .notOnQueue(sq))
    }

    @Test func testWorkItemsSideBySide() {
        // The same calls, labels and flags on both; only the type prefix differs.
        let dq = DispatchQueue(label: "d-items", qos: .utility, attributes: .concurrent)
        let sq = SQQueue(label: "s-items", qos: .utility, attributes: .concurrent)
        let counter = Counter()
        let dItem = DispatchWorkItem(qos: .userInitiated, flags: [.barrier, .enforceQoS]) {
            // ThreadSanitizer's libdispatch interceptors re-wrap the block without its flags,
            // so libdispatch runs it as a plain item there (ours is not intercepted).
            if !underThreadSanitizer {
                dispatchPrecondition(condition: .onQueueAsBarrier(dq))
            }
            counter.add()
        }
        let sItem = SQWorkItem(qos: .userInitiated, flags: [.barrier, .enforceQoS]) {
            sqPrecondition(condition: .onQueueAsBarrier(sq))
            counter.add()
        }
        let dNotified = DispatchSemaphore(value: 0)
        let sNotified = SQSemaphore(value: 0)
        dItem.notify(queue: .global()) { dNotified.signal() }
        sItem.notify(queue: .global()) { sNotified.signal() }
        dq.async(execute: dItem)
        sq.async(execute: sItem)
        #expect(dItem.wait(timeout: .now() + 60) == .success)
        sItem.wait()
        // libdispatch stops the process on a second wait for the same block; ours allows it.
        #expect(sItem.wait(timeout: .now()) == .success)
        #expect(dNotified.wait(timeout: .now() + 60) == .success)
        #expect(sNotified.wait(timeout: .now() + 60) == .success)
        #expect(counter.value == 2)

        // Cancelled before they start: neither runs, both finish.
        let dCancelled = DispatchWorkItem { counter.add() }
        let sCancelled = SQWorkItem { counter.add() }
        dCancelled.cancel()
        sCancelled.cancel()
        #expect(dCancelled.isCancelled && sCancelled.isCancelled)
        dq.sync(execute: dCancelled)
        sq.sync(execute: sCancelled)
        #expect(sCancelled.wait(timeout: .now()) == .success)
        #expect(counter.value == 2)

        // Groups with work items on both.
        let dGroup = DispatchGroup()
        let sGroup = SQGroup()
        dq.async(group: dGroup, execute: DispatchWorkItem { counter.add() })
        sq.async(group: sGroup, execute: SQWorkItem { counter.add() })
        let dDone = DispatchWorkItem {}
        let sDone = SQWorkItem {}
        dGroup.notify(queue: dq, work: dDone)
        sGroup.notify(queue: sq, work: sDone)
        #expect(dDone.wait(timeout: .now() + 60) == .success)
        #expect(sDone.wait(timeout: .now() + 60) == .success)
        #expect(counter.value == 4)
    }

    @Test func testAsyncAfterSideBySide() {
        let dq = DispatchQueue(label: "d-after")
        let sq = SQQueue(label: "s-after")
        let dDeadline = DispatchTime.now() + .milliseconds(5)
        let sDeadline = SQTime.now() + .milliseconds(5)
        let early = Counter()
        let dRan = DispatchSemaphore(value: 0)
        let sRan = SQSemaphore(value: 0)
        dq.asyncAfter(deadline: dDeadline, qos: .background, flags: .detached) {
            if DispatchTime.now() < dDeadline { early.add() }
            dRan.signal()
        }
        sq.asyncAfter(deadline: sDeadline, qos: .background, flags: .detached) {
            if SQTime.now() < sDeadline { early.add() }
            sRan.signal()
        }
        dq.asyncAfter(wallDeadline: .now() + 0.001) { dRan.signal() }
        sq.asyncAfter(wallDeadline: .now() + 0.001) { sRan.signal() }
        let dItem = DispatchWorkItem { dRan.signal() }
        let sItem = SQWorkItem { sRan.signal() }
        dq.asyncAfter(deadline: .now() + .milliseconds(1), execute: dItem)
        sq.asyncAfter(deadline: .now() + .milliseconds(1), execute: sItem)
        for _ in 0..<3 {
            #expect(dRan.wait(timeout: .now() + 60) == .success)
            #expect(sRan.wait(timeout: .now() + 60) == .success)
        }
        #expect(early.value == 0)
        // Swift's Duration works with SwiftQueues' times.
        #expect(SQTime.now() + Duration.milliseconds(1) > sDeadline - .seconds(1))
    }

    @Test func testQueueShapesSideBySide() {
        // QoS classes, global(qos:), inactive queues, autorelease frequency: same spellings.
        let dInactive = DispatchQueue(
            label: "d-inactive", qos: .background, attributes: [.concurrent, .initiallyInactive],
            autoreleaseFrequency: .workItem, target: nil)
        let sInactive = SQQueue(
            label: "s-inactive", qos: .background, attributes: [.concurrent, .initiallyInactive],
            autoreleaseFrequency: .workItem, target: nil)
        let dRan = DispatchSemaphore(value: 0)
        let sRan = SQSemaphore(value: 0)
        dInactive.async { dRan.signal() }
        sInactive.async { sRan.signal() }
        dInactive.activate()
        sInactive.activate()
        #expect(dRan.wait(timeout: .now() + 60) == .success)
        #expect(sRan.wait(timeout: .now() + 60) == .success)
        let dQoS: DispatchQoS = .init(qosClass: .utility, relativePriority: -1)
        let sQoS: SQQoS = .init(qosClass: .utility, relativePriority: -1)
        #expect(dQoS.relativePriority == sQoS.relativePriority)
        #expect(sInactive.qos == .background)
        let dGlobal = DispatchQueue.global(qos: .userInitiated)
        let sGlobal = SQQueue.global(qos: .userInitiated)
        #expect(dGlobal.sync { 1 } + sGlobal.sync { 1 } == 2)
    }
}
