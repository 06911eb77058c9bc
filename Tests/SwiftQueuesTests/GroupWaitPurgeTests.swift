import Testing
@testable import SwiftQueues

/// Cancelled async waits on an object that does not finish: their notifies do not pile up (a
/// service that waits for a long-lived group, or a pending work item, with a timeout,
/// cancelling each wait, once kept one registration per wait until the object finished), and
/// the waits that were not cancelled still return when it finishes. `registered` counts the
/// notifies registered now; `finish` empties the group or runs the item.
func expectCancelledWaitsPurged(
    registered: () -> Int,
    wait: @escaping @Sendable () async throws -> Void,
    finish: () -> Void
) async {
    let survivor = Task { try await wait() }
    let rounds = 20
    let perRound = 100
    var cancelled = 0
    for _ in 0..<rounds {
        let before = registered()
        let waits = (0..<perRound).map { _ in Task { try await wait() } }
        // Each wait registers its notify before it is cancelled (purges only run on a
        // cancellation, so the count only grows meanwhile).
        let deadline = SQTime.now() + .seconds(60)
        while registered() < before + perRound && SQTime.now() < deadline {
            await Task.yield()
        }
        #expect(registered() >= before + perRound)
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
    #expect(registered() <= 64)
    finish()
    #expect(await completesAsync { _ = try? await survivor.value })
    let failed: Bool
    if case .failure = await survivor.result { failed = true } else { failed = false }
    #expect(!failed)
}

@Suite struct GroupWaitPurgeTests {
    @Test func testCancelledWaitsDoNotPileUpOnABusyGroup() async {
        let group = SQGroup()
        group.enter()
        await expectCancelledWaitsPurged(
            registered: { group.registeredNotifyCount },
            wait: { try await group.waitUntilEmpty() },
            finish: { group.leave() })
    }

    /// The same for `SQWorkItem.waitUntilFinished()` on an item that has not run: each
    /// cancelled wait kept ~90 bytes until it ran (+90 MB per million; found by a user-side
    /// probe).
    @Test func testCancelledWaitsDoNotPileUpOnAPendingWorkItem() async {
        let item = SQWorkItem {}
        await expectCancelledWaitsPurged(
            registered: { item.registeredNotifyCount },
            wait: { try await item.waitUntilFinished() },
            finish: { item.perform() })
    }
}
