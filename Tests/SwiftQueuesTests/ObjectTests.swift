import SwiftQueues
import Testing

/// `SQObject`, the common base of queues, sources, groups and semaphores (Dispatch's
/// `DispatchObject`): code typed against it ports with the rename (it did not compile: there
/// was nothing to rename `DispatchObject` to).
@Suite struct ObjectTests {
    private func suspendAll(_ objects: [SQObject]) {
        for object in objects {
            object.suspend()
        }
    }

    private func resumeAll(_ objects: [SQObject]) {
        for object in objects {
            object.resume()
        }
    }

    @Test func testSuspendingAMixOfObjects() {
        let queue = SQQueue(label: "object-queue")
        let userData = SQSource.makeUserDataAddSource(queue: SQQueue(label: "object-source"))
        let source = userData as! SQSource
        let fired = SQSemaphore(value: 0)
        userData.setEventHandler { fired.signal() }
        userData.activate()
        let ran = SQSemaphore(value: 0)
        let released = Counter()
        let early = Counter()
        suspendAll([queue, source])
        queue.async {
            if released.value == 0 { early.add() }
            ran.signal()
        }
        userData.add(data: 1)
        // Nothing runs while suspended: a bounded window (no event shows "not yet"); the work
        // item also checks, whenever it runs, that the resume came first.
        #expect(ran.wait(timeout: shortly()) == .timedOut)
        #expect(fired.wait(timeout: shortly()) == .timedOut)
        released.add()
        resumeAll([queue, source])
        #expect(ran.wait(timeout: patience()) == .success)
        #expect(fired.wait(timeout: patience()) == .success)
        #expect(early.value == 0)
        userData.cancel()
    }

    @Test func testSetTargetThroughTheBase() {
        let key = SQSpecificKey<Int>()
        let target = SQQueue(label: "object-target")
        target.setSpecific(key: key, value: 7)
        let userData = SQSource.makeUserDataOrSource(queue: SQQueue(label: "object-first"))
        let seen = Log<Int?>()
        let fired = SQSemaphore(value: 0)
        userData.setEventHandler {
            seen.append(SQQueue.getSpecific(key: key))
            fired.signal()
        }
        let objects: [SQObject] = [userData as! SQSource, SQGroup(), SQSemaphore(value: 0)]
        for object in objects {
            object.setTarget(queue: target)
        }
        for object in objects {
            object.activate()  // a no-op for the group and the semaphore
        }
        userData.or(data: 1)
        #expect(fired.wait(timeout: patience()) == .success)
        #expect(seen.values == [7])
        userData.cancel()
    }
}
