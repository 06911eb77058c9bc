import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Signal sources: a signal sent to the process reaches the handler; bad signal numbers throw.
@Suite struct SourceSignalTests {
    @Test func testSIGUSR1IsDelivered() throws {
        let q = SQQueue(label: "signal")
        let source = try SQSource.makeSignalSource(signal: SIGUSR1, queue: q)
        let registered = SQSemaphore(value: 0)
        let delivered = SQSemaphore(value: 0)
        let cancelled = SQSemaphore(value: 0)
        let count = Counter()
        source.setRegistrationHandler { registered.signal() }
        source.setEventHandler {
            count.add(Int(source.data))
            delivered.signal()
        }
        source.setCancelHandler { cancelled.signal() }
        #expect(source.handle == UInt(SIGUSR1))
        #expect(source.mask == 0)
        source.activate()
        // Only once the source is registered is the signal caught rather than fatal.
        #expect(registered.wait(timeout: patience()) == .success)
        // Not under ThreadSanitizer: the kernel may hand the process-directed signal to a
        // thread that does not block it, such as the main thread parked in a futex wait; the
        // sanitizer defers the handler until that thread next calls an intercepted function,
        // which a parked thread may never do (the C tests cover delivery under the sanitizer).
        if !underThreadSanitizer {
            #expect(kill(getpid(), SIGUSR1) == 0)
            #expect(delivered.wait(timeout: patience()) == .success)
        }
        source.cancel()
        #expect(cancelled.wait(timeout: patience()) == .success)
        #expect(count.value == (underThreadSanitizer ? 0 : 1))
    }

    @Test(arguments: [0, -1, SIGKILL, SIGSTOP, 100_000])
    func testInvalidSignalThrows(signal: Int32) {
        let code = sourceErrno {
            _ = try SQSource.makeSignalSource(signal: signal)
        }
        #expect(code == EINVAL)
    }

    @Test func testErrorDescribesTheCall() {
        do {
            _ = try SQSource.makeSignalSource(signal: SIGKILL)
            Issue.record("SIGKILL cannot have a source")
        } catch {
            #expect(error.errno == EINVAL)
            #expect(error.code == .EINVAL)
            #expect(error.operation == "makeSignalSource(signal: \(SIGKILL))")
            #expect(error.description.contains("makeSignalSource(signal: 9)"))
            #expect(error.description.contains("errno \(EINVAL)"))
        }
    }
}
