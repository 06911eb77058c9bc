import Testing
@testable import SwiftQueues

/// Cancelled `waitUntilFinished()` calls on a work item that has not run: their notifies do not
/// pile up (a service that waits for a pending item with a timeout, cancelling each wait, kept
/// one registration per wait, ~90 bytes each, until the item ran: +90 MB per million), and the
/// waits that were not cancelled still return when it runs.
@Suite struct WorkItemWaitPurgeTests {
    @Test func testCancelledWaitsDoNotPileUpOnAPendingItem() async {
        let item = SQWorkItem {}
        let survivor = Task { try await item.waitUntilFinished() }
        let rounds = 20
        let perRound = 100
        var cancelled = 0
        for _ in 0..<rounds {
            let before = item.registeredNotifyCount
            let waits = (0..<perRound).map { _ in Task { try await item.waitUntilFinished() } }
            // Each wait registers its notify before it is cancelled (purges only run on a
            // cancellation, so the count only grows meanwhile).
            let deadline = SQTime.now() + .seconds(60)
            while item.registeredNotifyCount < before + perRound && SQTime.now() < deadline {
                await Task.yield()
            }
            #expect(item.registeredNotifyCount >= before + perRound)
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
        // At most the survivor and the cancellations since the last purge (fewer than 64); the
        // old code kept all 2,001.
        let left = item.registeredNotifyCount
        #expect(left <= 64)
        item.perform()
        #expect(await completesAsync { _ = try? await survivor.value })
        let failed: Bool
        if case .failure = await survivor.result { failed = true } else { failed = false }
        #expect(!failed)
    }
}
