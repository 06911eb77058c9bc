#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
@testable import SwiftQueues
import Synchronization
import Testing

/// The observer hub of an operation or queue under a steady stream of changes, the shape of a
/// queue that several threads keep adding operations to while it is observed. Each handler
/// call causes the next change, so the hub is never empty when the deliverer looks again.
/// The old hub dropped delivered changes only once it had caught up (so it kept every change,
/// and the operations they name, alive: 1.8 GB after 8 s in a user-side probe), and the
/// delivering thread never returned while changes kept coming (a thread setting `isSuspended`
/// on an observed queue stayed in the setter for good).
@Suite struct ObserverDeliveryTests {
    @Test func testSteadyStreamIsCompactedAndHandedOff() {
        let total = 20_000
        let hub = SQOperationObservers<Int>()
        let delivered = Counter()
        let outOfOrder = Counter()
        let mostStored = Atomic<Int>(0)
        let done = SQSemaphore(value: 0)
        let caller = pthread_self()
        let onCaller = Counter()
        let id = hub.add { change in
            if pthread_equal(pthread_self(), caller) != 0 {
                onCaller.add()
            }
            if change != delivered.add() {
                outOfOrder.add()
            }
            let stored = hub.storedChangeCount
            if stored > mostStored.load(ordering: .relaxed) {
                mostStored.store(stored, ordering: .relaxed)
            }
            if change + 1 < total {
                #expect(!hub.enqueue(change + 1))  // delivered by whoever is delivering
            } else {
                done.signal()
            }
        }
        #expect(hub.enqueue(0))
        hub.deliver()
        #expect(done.wait(timeout: patience()) == .success)
        // This thread handed out its budget, then a pool thread went on.
        #expect(onCaller.value == SQOperationObservers<Int>.deliveryBudget)
        #expect(delivered.value == total)
        #expect(outOfOrder.value == 0)
        #expect(mostStored.load(ordering: .relaxed) <= 4 * SQOperationObservers<Int>.compactionThreshold)
        hub.remove(id)
    }
}
