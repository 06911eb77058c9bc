import SwiftQueues
import Testing

/// Misuse of sources stops the process with a message naming the mistake (exit tests: each
/// body runs in a child process).
@Suite struct SourceMisuseTests {
    /// Whether the child's standard error contains `text`.
    private func stderr(_ result: ExitTest.Result?, contains text: String) -> Bool {
        guard let result else { return false }
        return String(decoding: result.standardErrorContent, as: UTF8.self).contains(text)
    }

    @Test func testResumingMoreOftenThanSuspendedIsReported() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let source = SQSource.makeUserDataAddSource()
            source.activate()
            source.suspend()
            source.resume()
            source.resume()
        }
        #expect(stderr(result, contains: "resumed more often than suspended"))
    }

    @Test func testReleasingASuspendedSourceIsReported() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let source = SQSource.makeTimerSource()
            source.activate()
            source.suspend()
            _ = source
        }
        #expect(stderr(result, contains: "released while it is suspended"))
    }

    @Test func testNegativeRepeatingIntervalIsReported() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let timer = SQSource.makeTimerSource()
            timer.schedule(deadline: .now(), repeating: .milliseconds(-5))
        }
        #expect(stderr(result, contains: "repeating interval milliseconds(-5) is negative"))
    }

    @Test func testNaNRepeatingIntervalIsReported() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let timer = SQSource.makeTimerSource()
            timer.schedule(wallDeadline: .now(), repeating: Double.nan)
        }
        #expect(stderr(result, contains: "not nan"))
    }

    @Test func testNegativeLeewayIsReported() async {
        let result = await #expect(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let timer = SQSource.makeTimerSource()
            timer.schedule(deadline: .now(), leeway: .nanoseconds(-1))
        }
        #expect(stderr(result, contains: "leeway nanoseconds(-1) is negative"))
    }
}
