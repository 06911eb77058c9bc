import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Process sources (pidfd): a child's exit is reported; missing processes and bad masks throw.
@Suite struct SourceProcessTests {
    @Test func testChildExitIsReported() throws {
        let q = SQQueue(label: "process")
        let pid = spawnTrue()
        // The child may already have exited: until it is reaped, its pid still names it.
        let source = try SQSource.makeProcessSource(identifier: pid, eventMask: .all, queue: q)
        let events = Log<SQSource.ProcessEvent>()
        let exited = SQSemaphore(value: 0)
        let cancelled = SQSemaphore(value: 0)
        source.setEventHandler {
            let data: SQSource.ProcessEvent = source.data
            events.append(data)
            if data.contains(.exit) {
                exited.signal()
            }
        }
        source.setCancelHandler { cancelled.signal() }
        #expect(source.handle == pid)
        #expect(source.mask == .all)
        source.activate()
        #expect(exited.wait(timeout: patience()) == .success)
        source.cancel()
        #expect(cancelled.wait(timeout: patience()) == .success)
        let status = reap(pid)
        #expect(status == 0)
        // Linux reports exits only: the fork, exec and signal bits are never set.
        #expect(events.values.allSatisfy { $0 == .exit })
    }

    @Test func testProcessThatDoesNotExistThrows() {
        let pid = spawnTrue()
        reap(pid)  // gone now (pids are not reused this soon)
        #expect(
            sourceErrno {
                _ = try SQSource.makeProcessSource(identifier: pid, eventMask: .exit)
            } == ESRCH)
        #expect(
            sourceErrno {
                _ = try SQSource.makeProcessSource(identifier: -1, eventMask: .exit)
            } == ESRCH)
        #expect(
            sourceErrno {
                _ = try SQSource.makeProcessSource(identifier: 0, eventMask: .exit)
            } == ESRCH)
    }

    @Test func testBadProcessMaskThrows() {
        #expect(
            sourceErrno {
                _ = try SQSource.makeProcessSource(identifier: getpid(), eventMask: [])
            } == EINVAL)
        #expect(
            sourceErrno {
                _ = try SQSource.makeProcessSource(
                    identifier: getpid(), eventMask: SQSource.ProcessEvent(rawValue: 0x1))
            } == EINVAL)
    }
}
