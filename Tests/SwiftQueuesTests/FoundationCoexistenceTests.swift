import Foundation
import SwiftQueues
import Testing

/// A file that imports Foundation (which re-exports Dispatch on Linux) and SwiftQueues: no name
/// collides, and both runtimes work side by side.
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
        #expect(SQTime.now() + delay <= SQTime.now() + interval + .seconds(1))
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
}
