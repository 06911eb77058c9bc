import Testing
import SwiftQueues

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SQQoS: values, the mapping of classes onto the C core's priorities, queues created with a
/// QoS, and `qos:` parameters (docs/libdispatch-compat.md: QoS classes).
@Suite struct QoSTests {
    @Test func testValues() {
        #expect(SQQoS.background.qosClass == .background)
        #expect(SQQoS.utility.qosClass == .utility)
        #expect(SQQoS.default.qosClass == .default)
        #expect(SQQoS.userInitiated.qosClass == .userInitiated)
        #expect(SQQoS.userInteractive.qosClass == .userInteractive)
        #expect(SQQoS.unspecified.qosClass == .unspecified)
        #expect(SQQoS.default.relativePriority == 0)
        let custom = SQQoS(qosClass: .utility, relativePriority: -15)
        #expect(custom.qosClass == .utility)
        #expect(custom.relativePriority == -15)
        #expect(custom != .utility)
        #expect(SQQoS(qosClass: .utility, relativePriority: 0) == .utility)
        #expect(SQQoS.QoSClass.allCases.count == 6)
    }

    @Test func testRelativePriorityOutOfRangeStops() async {
        await #expect(processExitsWith: .failure) {
            _ = SQQoS(qosClass: .default, relativePriority: 1)
        }
    }

    @Test func testGlobalQueueMapping() {
        // libdispatch's mapping, as cq_dispatch.h does it.
        let expected: [SQQoS.QoSClass: SQQueue.Priority] = [
            .userInteractive: .high, .userInitiated: .high,
            .default: .default, .unspecified: .default,
            .utility: .low, .background: .background,
        ]
        for (qosClass, priority) in expected {
            #expect(SQQueue.global(qos: qosClass) === SQQueue.global(priority: priority))
        }
        #expect(SQQueue.global() === SQQueue.global(priority: .default))
        #expect(SQQueue.global(qos: .userInteractive).qos == .userInitiated)
        #expect(SQQueue.global(qos: .utility).qos == .utility)
        #expect(SQQueue.global().qos == .default)
        #expect(SQQueue.main.qos == .unspecified)
    }

    @Test func testBackgroundWorkRunsAtNice19() {
        // The C core runs background work on nice-19 threads. (Submitted with async: a sync
        // onto an idle queue runs inline on the caller's thread.)
        #expect(niceOfWork(on: SQQueue.global(qos: .background)) == 19)
        #expect(niceOfWork(on: SQQueue(label: "qos-background", qos: .background)) == 19)
        let concurrent = SQQueue(label: "qos-bg-conc", qos: .background, attributes: .concurrent)
        #expect(niceOfWork(on: concurrent) == 19)
        // Not background: the process's own nice value, whatever it is, but not 19.
        let defaultNice = niceOfWork(on: SQQueue.global())
        if defaultNice != 19 {
            #expect(niceOfWork(on: SQQueue(label: "qos-utility", qos: .utility)) == defaultNice)
            // High work: a normal worker, or (both busy, on a loaded machine) the express
            // thread, 2 below where the process may lower its nice value.
            let high = niceOfWork(on: SQQueue.global(qos: .userInteractive))
            #expect(high == defaultNice || high == defaultNice - 2)
        }
    }

    @Test func testQueueTargetsGlobalQueueOfItsQoS() {
        let cases: [(SQQoS, SQQueue.Priority)] = [
            (.userInteractive, .high), (.userInitiated, .high), (.default, .default),
            (.unspecified, .default), (.utility, .low), (.background, .background),
        ]
        for (qos, priority) in cases {
            let q = SQQueue(label: "qos-target", qos: qos, attributes: .concurrent)
            #expect(q.qos == qos)
            let onTarget = q.sync { () -> [Bool] in
                SQQueue.Priority.allCases.map { other in
                    // Only the mapped global queue is on the chain.
                    let global = SQQueue.global(priority: other)
                    return onQueue(global)
                }
            }
            #expect(onTarget == SQQueue.Priority.allCases.map { $0 == priority })
        }
    }

    @Test func testExplicitTargetWinsOverQoS() {
        let root = SQQueue(label: "qos-root")
        let q = SQQueue(label: "qos-explicit", qos: .background, target: root)
        #expect(q.qos == .background)
        let onRoot = q.sync { (onQueue(root), onQueue(SQQueue.global(priority: .background))) }
        #expect(onRoot == (true, false))
        let defaultNice = niceOfWork(on: SQQueue.global())
        if defaultNice != 19 {
            #expect(niceOfWork(on: q) == defaultNice)
        }
    }

    @Test func testQoSParametersAccepted() {
        // qos: is accepted wherever Dispatch has it; the queue decides the priority.
        let q = SQQueue(label: "qos-params", qos: .utility, autoreleaseFrequency: .workItem)
        let group = SQGroup()
        let counter = Counter()
        q.async(group: group, qos: .userInteractive) { counter.add() }
        q.async(group: group, qos: .background, flags: .barrier) { counter.add() }
        group.enter()
        q.asyncAfter(deadline: SQTime.now(), qos: .userInitiated) {
            counter.add()
            group.leave()
        }
        group.enter()
        q.asyncAfter(wallDeadline: SQWallTime.now(), qos: .background, flags: .enforceQoS) {
            counter.add()
            group.leave()
        }
        let item = SQWorkItem(qos: .background) { counter.add() }
        q.async(group: group, execute: item)
        group.enter()
        item.notify(qos: .utility, queue: q) {
            counter.add()
            group.leave()
        }
        #expect(group.wait(timeout: patience()) == .success)
        let notified = SQSemaphore(value: 0)
        group.notify(qos: .userInteractive, flags: .inheritQoS, queue: q) { notified.signal() }
        #expect(notified.wait(timeout: patience()) == .success)
        #expect(counter.value == 6)
    }

    @Test func testAutoreleaseFrequencyAccepted() {
        for frequency in SQQueue.AutoreleaseFrequency.allCases {
            let q = SQQueue(label: "autorelease", autoreleaseFrequency: frequency)
            #expect(q.sync { 7 } == 7)
        }
    }
}

/// The nice value of the thread that runs a work item submitted to `queue` with `async`. On
/// Linux the nice value is per thread, and getpriority(PRIO_PROCESS, 0) reads the calling
/// thread's.
func niceOfWork(on queue: SQQueue) -> Int32 {
    let done = SQSemaphore(value: 0)
    let seen = Log<Int32>()
    queue.async {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        seen.append(errno == 0 ? value : Int32.min)
        done.signal()
    }
    #expect(done.wait(timeout: patience()) == .success)
    return seen.values.first ?? Int32.min
}

/// Whether the caller runs on `queue` (or a queue that targets it), without stopping the
/// process as a failing sqPrecondition would: a fresh specific key set on `queue` is found
/// exactly when `queue` is on the caller's target chain.
func onQueue(_ queue: SQQueue) -> Bool {
    let key = SQSpecificKey<Int>()
    queue.setSpecific(key: key, value: 1)
    defer { queue.setSpecific(key: key, value: nil) }
    return SQQueue.getSpecific(key: key) == 1
}
