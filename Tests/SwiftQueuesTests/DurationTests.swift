import Testing
import SwiftQueues

/// SQTimeInterval ↔ Duration, and SQTime / SQWallTime arithmetic with Duration.
@Suite struct DurationTests {
    @Test func testIntervalFromDuration() {
        #expect(SQTimeInterval(Duration.seconds(2)) == .seconds(2))
        #expect(SQTimeInterval(Duration.milliseconds(1.5)) == .microseconds(1_500))
        #expect(SQTimeInterval(Duration.nanoseconds(-7)) == .nanoseconds(-7))
        // Sub-nanosecond parts are truncated toward zero.
        let tiny = Duration(secondsComponent: 1, attosecondsComponent: 999_999_999)
        #expect(SQTimeInterval(tiny) == .nanoseconds(1_000_000_000))
        // Beyond the range: saturates, which counts as never.
        #expect(SQTimeInterval(Duration.seconds(Int64.max)) == .never)
        #expect(SQTimeInterval(Duration.seconds(Int64.min)) == .nanoseconds(Int.min))
    }

    @Test func testDurationFromInterval() {
        #expect(Duration(SQTimeInterval.seconds(3)) == .seconds(3))
        #expect(Duration(SQTimeInterval.milliseconds(-4)) == .milliseconds(-4))
        #expect(Duration(SQTimeInterval.microseconds(5)) == .microseconds(5))
        #expect(Duration(SQTimeInterval.nanoseconds(6)) == .nanoseconds(6))
        #expect(Duration(SQTimeInterval.never) == nil)
        // Exact, even beyond the nanosecond range of SQTimeInterval's arithmetic.
        #expect(Duration(SQTimeInterval.seconds(Int.max)) == .seconds(Int.max))
        // Round trip.
        for interval: SQTimeInterval in [.seconds(1), .milliseconds(-2), .nanoseconds(3)] {
            #expect(Duration(interval).map(SQTimeInterval.init) == interval)
        }
    }

    @Test func testTimeArithmetic() {
        let t = SQTime(uptimeNanoseconds: 10_000_000_000)
        #expect(t + Duration.milliseconds(5) == t + .milliseconds(5))
        #expect(t - Duration.seconds(1) == t - .seconds(1))
        #expect((t + Duration.nanoseconds(1)).uptimeNanoseconds == 10_000_000_001)
        #expect(t + .milliseconds(1.5) == t + .microseconds(1_500))  // a Double: Duration's
        #expect(t + Duration.seconds(Int64.max) == .distantFuture)
        #expect(t - Duration.seconds(Int64.max) < t)
        // `.seconds(1)` alone still means SQTimeInterval (as with Dispatch): not ambiguous.
        let interval = SQTimeInterval.seconds(1)
        #expect(t + .seconds(1) == t + interval)
    }

    @Test func testWallTimeArithmetic() {
        let w = SQWallTime.now()
        #expect(w + Duration.milliseconds(5) == w + .milliseconds(5))
        #expect(w - Duration.milliseconds(5) == w - .milliseconds(5))
        #expect(w + Duration.seconds(Int64.max) == .distantFuture)
        #expect(w + Duration.seconds(1) > w)
    }
}
