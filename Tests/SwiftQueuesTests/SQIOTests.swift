#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Synchronization
import SwiftQueues
import Testing

/// A thread-safe byte collector for handlers.
private final class Bytes: Sendable {
    private let storage = Mutex<[UInt8]>([])
    func append<S: Sequence>(_ s: S) where S.Element == UInt8 {
        storage.withLock { $0.append(contentsOf: s) }
    }
    var value: [UInt8] { storage.withLock { $0 } }
}

private func pattern(_ n: Int) -> [UInt8] {
    (0..<n).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
}

private func ioPipe() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    return (fds[0], fds[1])
}

private func ioWriteAll(_ fd: Int32, _ bytes: [UInt8]) {
    var off = 0
    bytes.withUnsafeBytes { buf in
        while off < buf.count {
            let r = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
            if r <= 0 { break }
            off += r
        }
    }
}

private func tempPath(_ name: String) -> String {
    "/tmp/sqio-test-\(getpid())-\(name)"
}

/// Written the way a DispatchIO user writes it; each test runs the same code against Dispatch
/// where the two can be compared.
@Suite struct SQIOTests {
    @Test func testStreamReadToEndOfFile() {
        let payload = pattern(300_000)
        // Dispatch
        do {
            let p = ioPipe()
            let queue = DispatchQueue(label: "dispatch-io")
            let done = DispatchSemaphore(value: 0)
            let got = Bytes()
            let cleaned = DispatchSemaphore(value: 0)
            let channel = DispatchIO(type: .stream, fileDescriptor: p.read, queue: queue) { _ in
                cleaned.signal()
            }
            channel.read(offset: 0, length: Int.max, queue: queue) { isDone, data, error in
                if let data { got.append(data) }
                if isDone {
                    #expect(error == 0)
                    done.signal()
                }
            }
            DispatchQueue.global().async { ioWriteAll(p.write, payload); close(p.write) }
            #expect(done.wait(timeout: .now() + 60) == .success)
            channel.close()
            #expect(cleaned.wait(timeout: .now() + 60) == .success)
            close(p.read)
            #expect(got.value == payload)
        }
        // SwiftQueues, renamed
        do {
            let p = ioPipe()
            let queue = SQQueue(label: "sq-io")
            let done = SQSemaphore(value: 0)
            let got = Bytes()
            let cleaned = SQSemaphore(value: 0)
            let channel = SQIO(type: .stream, fileDescriptor: p.read, queue: queue) { _ in
                cleaned.signal()
            }
            channel.read(offset: 0, length: Int.max, queue: queue) { isDone, data, error in
                if let data { got.append(data) }
                if isDone {
                    #expect(error == 0)
                    #expect(data?.isEmpty == true)  // end of file: done with empty data
                    done.signal()
                }
            }
            DispatchQueue.global().async { ioWriteAll(p.write, payload); close(p.write) }
            #expect(done.wait(timeout: patience()) == .success)
            channel.close()
            #expect(cleaned.wait(timeout: patience()) == .success)
            close(p.read)
            #expect(got.value == payload)
        }
    }

    @Test func testRandomFileWriteBarrierRead() throws {
        let path = tempPath("random")
        defer { unlink(path) }
        let queue = SQQueue(label: "sq-io-file")
        let channel = try #require(
            SQIO(type: .random, path: path, oflag: O_CREAT | O_TRUNC | O_RDWR, mode: 0o600,
                 queue: queue) { error in #expect(error == 0) })
        let wrote = SQSemaphore(value: 0)
        let barrierRan = SQSemaphore(value: 0)
        let read = SQSemaphore(value: 0)
        let got = Bytes()
        channel.write(offset: 3, data: SQData([1, 2, 3, 4]), queue: queue) { done, rest, error in
            if done {
                #expect(error == 0 && rest == nil)
                wrote.signal()
            }
        }
        channel.barrier { barrierRan.signal() }
        channel.setLimit(lowWater: 2)
        channel.setLimit(highWater: 2)
        channel.read(offset: 2, length: 10, queue: queue) { done, data, error in
            if let data { got.append(data); #expect(data.count <= 2) }
            if done {
                #expect(error == 0)
                read.signal()
            }
        }
        #expect(wrote.wait(timeout: patience()) == .success)
        #expect(barrierRan.wait(timeout: patience()) == .success)
        #expect(read.wait(timeout: patience()) == .success)
        #expect(got.value == [0, 1, 2, 3, 4])
        #expect(channel.fileDescriptor >= 0)
        channel.close()
    }

    @Test func testOneShotsLikeDispatch() {
        let payload = pattern(20_000)
        let p = ioPipe()
        let done = SQSemaphore(value: 0)
        SQIO.write(toFileDescriptor: p.write, data: SQData(payload), runningHandlerOn: .global()) {
            rest, error in
            #expect(rest == nil && error == 0)
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        close(p.write)
        let got = Bytes()
        SQIO.read(fromFileDescriptor: p.read, maxLength: Int.max, runningHandlerOn: .global()) {
            data, error in
            #expect(error == 0)
            got.append(data)
            done.signal()
        }
        #expect(done.wait(timeout: patience()) == .success)
        close(p.read)
        #expect(got.value == payload)
    }

    @Test func testAsyncForms() async throws {
        let payload = pattern(100_000)
        let p = ioPipe()
        try await SQIO.write(toFileDescriptor: p.write, data: SQData(payload[..<50_000]))
        DispatchQueue.global().async { ioWriteAll(p.write, Array(payload[50_000...])); close(p.write) }
        let channel = SQIO(type: .stream, fileDescriptor: p.read, queue: .global()) { _ in
            close(p.read)
        }
        var got: [UInt8] = []
        for try await chunk in channel.read(offset: 0, length: Int.max) {
            got.append(contentsOf: chunk)
        }
        channel.close()
        #expect(got == payload)

        let q = ioPipe()
        close(q.write)
        let empty = try await SQIO.read(fromFileDescriptor: q.read, maxLength: 100)
        #expect(empty.isEmpty)
        close(q.read)
        await #expect(throws: SQIOError(errno: EBADF)) {
            _ = try await SQIO.read(fromFileDescriptor: -1, maxLength: 10)
        }
    }

    @Test func testCloseStopAndErrors() {
        let p = ioPipe()
        let queue = SQQueue(label: "sq-io-stop")
        let done = SQSemaphore(value: 0)
        let channel = SQIO(type: .stream, fileDescriptor: p.read, queue: queue) { _ in
            close(p.read)  // the descriptor is ours again only now
            close(p.write)
            done.signal()
        }
        channel.read(offset: 0, length: 10, queue: queue) { isDone, data, error in
            if isDone {
                #expect(error == ECANCELED && data == nil)
                done.signal()
            }
        }
        channel.close(flags: .stop)
        #expect(done.wait(timeout: patience()) == .success)
        #expect(done.wait(timeout: patience()) == .success)

        let missing = SQIO(
            type: .stream, path: "/nonexistent-dir/x", oflag: O_RDONLY, mode: 0, queue: queue
        ) { error in
            #expect(error == ENOENT)
            done.signal()
        }
        missing?.read(offset: 0, length: 1, queue: queue) { isDone, _, error in
            if isDone {
                #expect(error == ENOENT)
                done.signal()
            }
        }
        missing?.close()
        #expect(done.wait(timeout: patience()) == .success)
        #expect(done.wait(timeout: patience()) == .success)
        #expect(SQIO(type: .stream, path: "relative", oflag: O_RDONLY, mode: 0, queue: queue) { _ in } == nil)
    }
}
