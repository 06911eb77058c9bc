#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
@testable import SwiftQueues
import Testing

/// The queue's locked state is laid out by cache line (see `SQOperationQueue.LockedState`):
/// a field added or resized in the wrong place would quietly put the adding thread's and the
/// finishing thread's writes back on shared lines, which only a benchmark at the far core
/// placement shows. The mutex takes the first 40 bytes of the lock's 64-byte-aligned storage.
@Suite struct OperationQueueLayoutTests {
    private typealias State = SQOperationQueue.LockedState
    private let mutexBytes = 40

    private func line(_ key: PartialKeyPath<State>) -> Int? {
        MemoryLayout<State>.offset(of: key).map { (mutexBytes + $0) / 64 }
    }

    @Test func testLockedStateLayout() {
        // Written by both sides for every operation: with the mutex.
        #expect(line(\State.storedCount) == 0)
        #expect(line(\State.storedRunning) == 0)
        #expect(line(\State.storedRetiredCount) == 0)
        #expect(line(\State.retired) == 0)
        // Written by the finishing thread.
        #expect(line(\State.first) == 1)
        #expect(line(\State.idleWaiters) == 1)
        #expect(line(\State.idleContinuations) == 1)
        // Read by both for every operation, written rarely.
        #expect(line(\State.ready) == 2)
        #expect(line(\State.suspended) == 2)
        #expect(line(\State.limit) == 2)
        #expect(line(\State.barriers) == 2)
        #expect(line(\State.observers) == 2)
        // Written by the adding thread.
        #expect(line(\State.last) == 3)
        #expect(line(\State.nextSequence) == 3)
        #expect(line(\State.underlying) == 3)
        #expect(line(\State.qualityOfService) == 3)
        #expect(MemoryLayout<pthread_mutex_t>.size == mutexBytes)
    }
}
