import Testing
import SwiftQueues

#if canImport(Glibc)
import Glibc
#endif

/// Time values: ordering, arithmetic, saturation, distant future (C: cq_time / cq_walltime).
@Suite struct TimeTests {
    @Test func testMonotonic() {
        let now = SQTime.now()
        #expect(now + 1.0 > now)
        #expect(now - 1.0 < now)
        #expect((now + .seconds(2)).uptimeNanoseconds == now.uptimeNanoseconds + 2_000_000_000)
        #expect((now + .milliseconds(3)).uptimeNanoseconds == now.uptimeNanoseconds + 3_000_000)
        #expect((now + .microseconds(4)).uptimeNanoseconds == now.uptimeNanoseconds + 4_000)
        #expect((now + .nanoseconds(5)).uptimeNanoseconds == now.uptimeNanoseconds + 5)
        #expect((now - .nanoseconds(5)).uptimeNanoseconds == now.uptimeNanoseconds - 5)
        #expect((now + 0.25).uptimeNanoseconds == now.uptimeNanoseconds + 250_000_000)
        #expect(SQTime.now() >= now)
    }

    @Test func testTimeSaturates() {
        let now = SQTime.now()
        #expect(now + .never == .distantFuture)
        #expect(now + .seconds(Int.max) == .distantFuture)
        #expect(now + Double.infinity == .distantFuture)
        #expect(SQTime.distantFuture + .seconds(1) == .distantFuture)
        #expect(SQTime.distantFuture - .seconds(1) == .distantFuture)
        #expect(SQTime.distantFuture.uptimeNanoseconds == UInt64.max)
        #expect(now < .distantFuture)
        // Before the clock's origin: the earliest time, which is in the past.
        let earliest = now - .seconds(Int.max)
        #expect(earliest < now)
        #expect(earliest.uptimeNanoseconds >= 1)
        // 0 is "now" (Dispatch's DISPATCH_TIME_NOW), also as the base of arithmetic.
        #expect(SQTime(uptimeNanoseconds: 0).uptimeNanoseconds == 0)
        let soon = SQTime(uptimeNanoseconds: 0) + .seconds(100)
        #expect(soon > SQTime.now() + .seconds(99))
        #expect(soon < SQTime.now() + .seconds(101))
        #expect(SQSemaphore(value: 0).wait(timeout: SQTime(uptimeNanoseconds: 0)) == .timedOut)
        #expect(SQTime(uptimeNanoseconds: UInt64.max) == .distantFuture)
        #expect(SQTime(uptimeNanoseconds: 12_345).uptimeNanoseconds == 12_345)
        // The last monotonic time is a time, as in Dispatch (ours made it distantFuture).
        let last = SQTime(uptimeNanoseconds: UInt64(Int64.max))
        #expect(last != .distantFuture)
        #expect(last.uptimeNanoseconds == UInt64(Int64.max))
        #expect(last < .distantFuture)
        // Anything later is distantFuture, as in Dispatch (ours gave a wall-clock time in 1970,
        // which every wait and asyncAfter had passed).
        #expect(last + .milliseconds(100) == .distantFuture)
        #expect(last + 1.0 == .distantFuture)
        #expect(last - .seconds(1) < last)
        #expect(SQTime(uptimeNanoseconds: UInt64(Int64.max) + 1) == .distantFuture)
        // NaN seconds count as forever both ways, as in Dispatch (`- nan` gave the earliest
        // time, and a wait with it returned at once).
        #expect(now + Double.nan == .distantFuture)
        #expect(now - Double.nan == .distantFuture)
        #expect(SQWallTime.now() - Double.nan == .distantFuture)
        #expect(now - Double.infinity < now)
    }

    @Test func testTimeIntervalEquality() {
        #expect(SQTimeInterval.seconds(1) == .milliseconds(1_000))
        #expect(SQTimeInterval.milliseconds(1) == .microseconds(1_000))
        #expect(SQTimeInterval.microseconds(1) == .nanoseconds(1_000))
        #expect(SQTimeInterval.seconds(1) != .seconds(2))
        #expect(SQTimeInterval.never == .never)
        // As Dispatch: .never equals only itself, though in arithmetic a finite interval that
        // saturates counts as forever.
        #expect(SQTimeInterval.seconds(Int.max) != .never)
        #expect(SQTime.now() + .seconds(Int.max) == .distantFuture)
        #expect(Set<SQTimeInterval>([.never, .nanoseconds(Int.max)]).count == 2)
        #expect(Set<SQTimeInterval>([.seconds(1), .milliseconds(1_000)]).count == 1)
    }

    @Test func testWalltime() {
        let now = SQWallTime.now()
        #expect(now + 1.0 > now)
        #expect(now - .seconds(1) < now)
        #expect(now + .never == .distantFuture)
        #expect(now < .distantFuture)
        let epoch = SQWallTime(timespec: timespec(tv_sec: 0, tv_nsec: 0))
        let later = SQWallTime(timespec: timespec(tv_sec: 1, tv_nsec: 500))
        #expect(epoch < later)
        #expect(epoch + .nanoseconds(1_000_000_500) == later)
        #expect(epoch < now)
    }

    @Test func testTimeoutInThePastReturnsAtOnce() {
        // A deadline that has passed only checks; it must not wait for the original interval.
        let s = SQSemaphore(value: 0)
        #expect(s.wait(timeout: SQTime.now() - .seconds(10)) == .timedOut)
        #expect(s.wait(wallTimeout: SQWallTime.now() - .seconds(10)) == .timedOut)
        s.signal()
        #expect(s.wait(timeout: SQTime.now() - .seconds(10)) == .success)
    }
}
