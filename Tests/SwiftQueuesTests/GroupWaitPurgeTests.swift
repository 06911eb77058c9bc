import Testing
@testable import SwiftQueues

/// Cancelled `waitUntilEmpty()` calls on a group that never empties: their notifies do not pile
/// up (a service that waits for a long-lived group with a timeout, cancelling each wait, once
/// kept one registration per wait until the group emptied), and the waits that were not
/// cancelled still return when it empties.
@Suite struct GroupWaitPurgeTests {
    @Test func testCancelledWaitsDoNotPileUpOnABusyGroup() async {
        let group = SQGroup()
        group.enter()
        let survivor = Task { try await group.waitUntilEmpty() }
        let rounds = 20
        let perRound = 100
        var cancelled = 0
        for _ in 0..<rounds {
            let before = group.registeredNotifyCount
            let waits = (0..<perRound).map { _ in Task { try await group.waitUntilEmpty() } }
            // Each wait registers its notify before it is cancelled (purges only run on a
            // cancellation, so the count only grows meanwhile).
            let deadline = SQTime.now() + .seconds(60)
            while group.registeredNotifyCount < before + perRound && SQTime.now() < deadline {
                await Task.yield()
            }
            #expect(group.registeredNotifyCount >= before + perRound)
            for wait in waits {
                wait.cancel()
            }
            for wait in waits {
                if case .failure = await wait.result {
                    cancelled += 1
                }
            }
        }
        #expect(cancelled == rounds * perRound)
        // At most the survivor and the cancellations since the last purge (fewer than 64).
        let left = group.registeredNotifyCount
        #expect(left <= 64)
        group.leave()
        #expect(await completesAsync { _ = try? await survivor.value })
        let failed: Bool
        if case .failure = await survivor.result { failed = true } else { failed = false }
        #expect(!failed)
    }
}
