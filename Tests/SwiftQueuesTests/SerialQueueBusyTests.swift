import Dispatch
import Foundation
import SwiftQueues
import Testing

/// A service's serial queue keeps answering while CPU-bound work on the global queue holds
/// every CPU, written as a Dispatch user writes it and run on Dispatch and, renamed, on
/// SwiftQueues. Dispatch's serial queues overcommit (a drain gets a thread when none is idle);
/// ours did not, and a request waited for a batch task to end (2.9 s behind tasks of 1.5 s).
/// The spinners spin until the test lets them go, so each answer came while they held the
/// CPUs.
@Suite(.serialized) struct SerialQueueBusyTests {
    private static let requests = 10

    /// Spins until `release` is set (or for longer than any wait here).
    private static func spin(_ release: Counter) {
        let until = DispatchTime.now() + .seconds(120)
        while release.value == 0 && DispatchTime.now() < until {}
    }

    @Test func testDispatchServiceQueueAnswersBesideCPUBoundWork() {
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        let release = Counter()
        let started = DispatchSemaphore(value: 0)
        let spinners = DispatchGroup()
        for _ in 0..<2 * cpus {
            DispatchQueue.global().async(group: spinners) {
                started.signal()
                Self.spin(release)
            }
        }
        for _ in 0..<cpus {
            #expect(started.wait(timeout: .now() + 60) == .success)
        }
        let service = DispatchQueue(label: "busy.dispatch.service")
        let answered = DispatchSemaphore(value: 0)
        var answers = 0
        for _ in 0..<Self.requests {
            service.async { answered.signal() }
            if answered.wait(timeout: .now() + 60) == .success { answers += 1 }
        }
        service.asyncAfter(deadline: .now() + .milliseconds(1)) { answered.signal() }
        let late = answered.wait(timeout: .now() + 60)
        release.add()
        #expect(answers == Self.requests)
        #expect(late == .success)
        #expect(spinners.wait(timeout: .now() + 60) == .success)
    }

    @Test func testServiceQueueAnswersBesideCPUBoundWork() {
        let release = Counter()
        let spinning = Counter()
        let spinners = Self.holdEveryCPU(release, spinning)
        let service = SQQueue(label: "busy.sq.service")
        let answered = SQSemaphore(value: 0)
        var answers = 0
        for _ in 0..<Self.requests {
            service.async { answered.signal() }
            if answered.wait(timeout: .now() + 60) == .success { answers += 1 }
        }
        service.asyncAfter(deadline: .now() + .milliseconds(1)) { answered.signal() }
        let late = answered.wait(timeout: .now() + 60)
        let stillSpinning = spinning.value
        release.add()
        #expect(answers == Self.requests)
        #expect(late == .success)
        // Every worker spun: an overcommit thread ran the answers.
        #expect(stillSpinning >= 1)
        #expect(spinners.wait(timeout: .now() + 60) == .success)
    }

    /// Starts `2 × CPUs` spinners on our default global queue and waits until one per CPU
    /// spins; they stop when `release` is set, or after 120 s.
    private static func holdEveryCPU(_ release: Counter, _ spinning: Counter) -> SQGroup {
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        let started = SQSemaphore(value: 0)
        let spinners = SQGroup()
        for _ in 0..<2 * cpus {
            SQQueue.global().async(group: spinners) {
                spinning.add()
                started.signal()
                Self.spin(release)
                spinning.add(-1)
            }
        }
        for _ in 0..<cpus {
            _ = started.wait(timeout: .now() + 60)
        }
        return spinners
    }

    /// An operation queue of width 1 runs its operations on a serial queue of its own, as
    /// Foundation's does (on a serial dispatch queue): they ran only once the CPU-bound work
    /// ended (20 s behind spinning tasks; Foundation: at once).
    @Test func testWidthOneOperationQueueRunsBesideCPUBoundWork() {
        let release = Counter()
        let spinning = Counter()
        let spinners = Self.holdEveryCPU(release, spinning)
        let queue = SQOperationQueue()
        queue.maxConcurrentOperationCount = 1
        let ran = SQSemaphore(value: 0)
        let order = Counter()
        var previous: SQOperation?
        for index in 0..<20 {
            let operation = SQBlockOperation {
                if order.add() == index { ran.signal() }
            }
            if let previous { operation.addDependency(previous) }
            previous = operation
            queue.addOperation(operation)
        }
        var answered = 0
        for _ in 0..<20 where ran.wait(timeout: .now() + 60) == .success {
            answered += 1
        }
        let stillSpinning = spinning.value
        release.add()
        #expect(answered == 20)
        #expect(stillSpinning >= 1)
        queue.waitUntilAllOperationsAreFinished()
        #expect(spinners.wait(timeout: .now() + 60) == .success)
    }

    /// The async bridges resume their task from a serial queue of the library's: a work item
    /// that ran at once was awaited until the CPU-bound work ended (its notify went to the
    /// default global queue, behind the spinners).
    @Test func testAwaitBridgesResumeBesideCPUBoundWork() async throws {
        let release = Counter()
        let spinning = Counter()
        let spinners = Self.holdEveryCPU(release, spinning)
        let service = SQQueue(label: "busy.sq.bridges")
        let item = SQWorkItem {}
        service.async(execute: item)
        try await item.waitUntilFinished()
        let group = SQGroup()
        service.async(group: group) {}
        try await group.waitUntilEmpty()
        let stillSpinning = spinning.value
        release.add()
        #expect(stillSpinning >= 1)
        #expect(spinners.wait(timeout: .now() + 60) == .success)
    }
}
