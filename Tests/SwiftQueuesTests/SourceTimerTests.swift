import SwiftQueues
import Testing

/// Timer sources: repeating and one-shot schedules on both clocks, leeway, missed fires counted,
/// suspension, rescheduling from the handler (C: Tests/c source timer tests). Timing is only
/// ever checked as "not before".
@Suite struct SourceTimerTests {
    @Test func testTimerRepeatsThenCancel() {
        let q = SQQueue(label: "timer-repeat")
        let timer = SQSource.makeTimerSource(queue: q)
        let fires = Counter()
        let calls = Counter()
        let reached = SQSemaphore(value: 0)
        let reachedAt = Log<SQTime>()
        let cancelled = SQSemaphore(value: 0)
        let cancelDone = Counter()
        let lateEvents = Counter()
        let start = SQTime.now()
        let first = start + .milliseconds(2)
        timer.schedule(deadline: first, repeating: .milliseconds(2), leeway: .milliseconds(1))
        timer.setEventHandler {
            if cancelDone.value != 0 { lateEvents.add() }
            calls.add()
            let data = Int(timer.data)
            let before = fires.add(data)
            if before < 5 && before + data >= 5 {
                reachedAt.append(SQTime.now())
                reached.signal()
            }
        }
        timer.setCancelHandler {
            cancelDone.add()
            cancelled.signal()
        }
        #expect(timer.handle == 0)
        #expect(timer.mask == 0)
        #expect(timer.data == 0)  // outside the handler
        timer.activate()
        #expect(reached.wait(timeout: patience()) == .success)
        #expect(!timer.isCancelled)
        timer.cancel()
        #expect(timer.isCancelled)
        #expect(cancelled.wait(timeout: patience()) == .success)
        #expect(fires.value >= 5)
        #expect(calls.value >= 1 && calls.value <= fires.value)
        #expect(lateEvents.value == 0)
        // Fire n (from 0) is due at first + n * 2 ms: the fifth not before first + 8 ms.
        #expect(reachedAt.values.count == 1)
        #expect(reachedAt.values[0] >= first + .milliseconds(8))
    }

    @Test func testTimerRepeatingInSecondsWithLeeway() {
        let q = SQQueue(label: "timer-double")
        let timer = SQSource.makeTimerSource(flags: .strict, queue: q)
        let fires = Counter()
        let reached = SQSemaphore(value: 0)
        let reachedAt = Log<SQTime>()
        let start = SQTime.now()
        timer.schedule(deadline: start, repeating: 0.002, leeway: .milliseconds(20))
        timer.setEventHandler {
            let data = Int(timer.data)
            let before = fires.add(data)
            if before < 3 && before + data >= 3 {
                reachedAt.append(SQTime.now())
                reached.signal()
            }
        }
        timer.activate()
        #expect(reached.wait(timeout: patience()) == .success)
        timer.cancel()
        #expect(reachedAt.values.count == 1)
        #expect(reachedAt.values[0] >= start + .milliseconds(4))
    }

    @Test func testOneShotFiresOnceNotBeforeItsDeadline() {
        let q = SQQueue(label: "timer-once")
        let timer = SQSource.makeTimerSource(queue: q)
        let calls = Counter()
        let firedAt = Log<SQTime>()
        let dataSeen = Log<UInt>()
        let fired = SQSemaphore(value: 0)
        let cancelled = SQSemaphore(value: 0)
        let deadline = SQTime.now() + .milliseconds(20)
        timer.schedule(deadline: deadline, leeway: .milliseconds(30))
        timer.setEventHandler {
            firedAt.append(SQTime.now())
            dataSeen.append(timer.data)
            calls.add()
            fired.signal()
        }
        timer.setCancelHandler { cancelled.signal() }
        timer.activate()
        #expect(fired.wait(timeout: patience()) == .success)
        timer.cancel()
        #expect(cancelled.wait(timeout: patience()) == .success)
        #expect(calls.value == 1)
        #expect(dataSeen.values == [1])
        #expect(firedAt.values[0] >= deadline)
    }

    @Test func testWallClockSchedules() {
        let q = SQQueue(label: "timer-wall")
        // One-shot on the wall clock, with the default repeat (never) and leeway.
        let once = SQSource.makeTimerSource(queue: q)
        let onceFired = SQSemaphore(value: 0)
        let onceAt = Log<SQWallTime>()
        let wallDeadline = SQWallTime.now() + .milliseconds(5)
        once.schedule(wallDeadline: wallDeadline)
        once.setEventHandler {
            onceAt.append(SQWallTime.now())
            onceFired.signal()
        }
        once.activate()
        // Repeating on the wall clock, with an interval as a TimeInterval and in seconds.
        let repeating = SQSource.makeTimerSource(queue: q)
        let seconds = SQSource.makeTimerSource(queue: q)
        let repeats = Counter()
        let secondsRepeats = Counter()
        let repeated = SQSemaphore(value: 0)
        repeating.schedule(wallDeadline: .now(), repeating: .milliseconds(1))
        repeating.setEventHandler {
            let data = Int(repeating.data)
            let before = repeats.add(data)
            if before < 3 && before + data >= 3 { repeated.signal() }
        }
        seconds.schedule(wallDeadline: .now(), repeating: 0.001)
        seconds.setEventHandler {
            let data = Int(seconds.data)
            let before = secondsRepeats.add(data)
            if before < 3 && before + data >= 3 { repeated.signal() }
        }
        repeating.activate()
        seconds.activate()
        #expect(onceFired.wait(timeout: patience()) == .success)
        #expect(repeated.wait(timeout: patience()) == .success)
        #expect(repeated.wait(timeout: patience()) == .success)
        once.cancel()
        repeating.cancel()
        seconds.cancel()
        #expect(onceAt.values[0] >= wallDeadline)
        #expect(repeats.value >= 3)
        #expect(secondsRepeats.value >= 3)
    }

    @Test func testMissedFiresAreCountedNotReplayed() {
        // A schedule whose start is 50 ms in the past: fires 0...50 are all due at once and
        // arrive as one handler call whose data counts them.
        let q = SQQueue(label: "timer-missed")
        let timer = SQSource.makeTimerSource(queue: q)
        let firstData = Log<UInt>()
        let fired = SQSemaphore(value: 0)
        let past = SQTime(uptimeNanoseconds: SQTime.now().uptimeNanoseconds - 50_000_000)
        timer.schedule(deadline: past, repeating: .milliseconds(1))
        timer.setEventHandler {
            if firstData.values.isEmpty {
                firstData.append(timer.data)
                fired.signal()
            }
        }
        timer.activate()
        #expect(fired.wait(timeout: patience()) == .success)
        timer.cancel()
        #expect(firstData.values[0] >= 51)
    }

    @Test func testSuspendedTimerCountsWhatItMissed() {
        // Suspended from before its activation, the timer comes due and fires every 1 ms
        // without a handler call; the resume delivers what it missed in one call.
        let q = SQQueue(label: "timer-suspend")
        let timer = SQSource.makeTimerSource(queue: q)
        let resumed = Counter()
        let early = Counter()
        let firstData = Log<UInt>()
        let fired = SQSemaphore(value: 0)
        let start = SQTime.now()
        timer.schedule(deadline: start, repeating: .milliseconds(1))
        timer.setEventHandler {
            if resumed.value == 0 { early.add() }
            if firstData.values.isEmpty {
                firstData.append(timer.data)
                fired.signal()
            }
        }
        timer.suspend()
        timer.activate()  // registered, still suspended
        // Let 20 ms pass, measured by another timer (no sleeping).
        let marker = SQSource.makeTimerSource()
        let markerFired = SQSemaphore(value: 0)
        marker.schedule(deadline: start + .milliseconds(20))
        marker.setEventHandler { markerFired.signal() }
        marker.activate()
        #expect(markerFired.wait(timeout: patience()) == .success)
        marker.cancel()
        resumed.add()
        timer.resume()
        #expect(fired.wait(timeout: patience()) == .success)
        timer.cancel()
        #expect(early.value == 0)
        // Fires 0...20 were due (at start + n ms) before the resume.
        #expect(firstData.values[0] >= 21)
    }

    @Test func testRescheduleFromTheHandler() {
        // A chain of one-shots, each scheduling the next from the event handler.
        let q = SQQueue(label: "timer-chain")
        let timer = SQSource.makeTimerSource(queue: q)
        let links = Counter()
        let done = SQSemaphore(value: 0)
        timer.schedule(deadline: .now())
        timer.setEventHandler {
            if links.add() + 1 < 3 {
                timer.schedule(deadline: .now() + .milliseconds(1))
            } else {
                timer.cancel()
            }
        }
        timer.setCancelHandler { done.signal() }
        timer.activate()
        #expect(done.wait(timeout: patience()) == .success)
        #expect(links.value == 3)
    }

    @Test func testTimerWithoutQueueRunsOnTheGlobalQueue() {
        let timer = SQSource.makeTimerSource()
        let fired = SQSemaphore(value: 0)
        timer.schedule(deadline: .now())
        timer.setEventHandler { fired.signal() }
        timer.resume()  // Dispatch's older spelling of activate()
        #expect(fired.wait(timeout: patience()) == .success)
        timer.cancel()
    }
}
