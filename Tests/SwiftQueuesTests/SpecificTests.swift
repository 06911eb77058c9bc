import Testing
import SwiftQueues

/// Queue-specific values: own, inherited through the target chain, replaced, removed, freed
/// (C: cq_queue_set_specific / cq_queue_get_specific / cq_get_specific).
@Suite struct SpecificTests {
    @Test func testSpecificOwn() {
        let q = SQQueue(label: "specific")
        let key = SQSpecificKey<Int>()
        #expect(q.getSpecific(key: key) == nil)
        q.setSpecific(key: key, value: 17)
        #expect(q.getSpecific(key: key) == 17)
        // Off the queue the static lookup finds nothing; on it, the queue's value.
        #expect(SQQueue.getSpecific(key: key) == nil)
        let done = SQSemaphore(value: 0)
        let seen = Log<Int?>()
        q.async {
            seen.append(SQQueue.getSpecific(key: key))
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(seen.values == [17])
    }

    @Test func testSpecificInheritedViaTarget() {
        let root = SQQueue(label: "specific-root")
        let child = SQQueue(label: "specific-child", target: root)
        let inherited = SQSpecificKey<String>()
        let shadowed = SQSpecificKey<String>()
        root.setSpecific(key: inherited, value: "root")
        root.setSpecific(key: shadowed, value: "root")
        child.setSpecific(key: shadowed, value: "child")
        // The instance lookup sees the queue's own keys only.
        #expect(child.getSpecific(key: inherited) == nil)
        #expect(child.getSpecific(key: shadowed) == "child")
        let done = SQSemaphore(value: 0)
        let seen = Log<String?>()
        child.async {
            seen.append(SQQueue.getSpecific(key: inherited))
            seen.append(SQQueue.getSpecific(key: shadowed))
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        #expect(seen.values == ["root", "child"])
    }

    @Test func testSpecificKeysAreDistinct() {
        let q = SQQueue(label: "specific-keys")
        let a = SQSpecificKey<Int>()
        let b = SQSpecificKey<Int>()
        let c = SQSpecificKey<[String]>()
        q.setSpecific(key: a, value: 1)
        q.setSpecific(key: b, value: 2)
        q.setSpecific(key: c, value: ["x", "y"])
        #expect(q.getSpecific(key: a) == 1)
        #expect(q.getSpecific(key: b) == 2)
        #expect(q.getSpecific(key: c) == ["x", "y"])
        // A value on one queue is not visible on another.
        #expect(SQQueue(label: "other").getSpecific(key: a) == nil)
    }

    @Test func testSpecificReplaceAndRemove() {
        let q = SQQueue(label: "specific-replace")
        let key = SQSpecificKey<DeinitSignal>()
        let freed = SQSemaphore(value: 0)
        q.setSpecific(key: key, value: DeinitSignal(freed, tag: 1))
        #expect(q.getSpecific(key: key)?.tag == 1)
        // Replacing releases the old value (asynchronously, on a global queue).
        q.setSpecific(key: key, value: DeinitSignal(freed, tag: 2))
        #expect(q.getSpecific(key: key)?.tag == 2)
        #expect(freed.wait(timeout: patience()) == .success)
        // Removing releases the current one.
        q.setSpecific(key: key, value: nil)
        #expect(q.getSpecific(key: key) == nil)
        #expect(freed.wait(timeout: patience()) == .success)
    }

    @Test func testSpecificReleasedWithQueue() {
        let freed = SQSemaphore(value: 0)
        let key = SQSpecificKey<DeinitSignal>()
        do {
            let q = SQQueue(label: "specific-freed")
            q.setSpecific(key: key, value: DeinitSignal(freed))
            #expect(q.getSpecific(key: key) != nil)
        }
        #expect(freed.wait(timeout: patience()) == .success)
    }

    @Test func testSpecificOnGlobalQueue() {
        // Work on a global queue sees no value for a key set on no queue.
        let key = SQSpecificKey<Int>()
        let value = SQQueue.global().sync { SQQueue.getSpecific(key: key) }
        #expect(value == nil)
    }
}
