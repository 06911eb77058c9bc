import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Read and write sources on pipes; descriptors that are not open throw EBADF.
@Suite struct SourceDescriptorTests {
    @Test func testPipeReadToEndOfFile() throws {
        let q = SQQueue(label: "read-pipe")
        let (readEnd, writeEnd) = makePipe()
        #expect(fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK) == 0)
        let message: [UInt8] = Array("hello, source".utf8)
        writeAll(writeEnd, message)
        close(writeEnd)  // the reader sees the bytes, then end of file

        let source = try SQSource.makeReadSource(fileDescriptor: readEnd, queue: q)
        let received = Log<UInt8>()
        let dataSeen = Log<UInt>()
        let endOfFile = Counter()
        let cancelled = SQSemaphore(value: 0)
        source.setEventHandler {
            let available = source.data
            dataSeen.append(available)
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n > 0 {
                for byte in buffer[0..<n] { received.append(byte) }
            } else if n == 0 {
                endOfFile.add()
                source.cancel()
            }
        }
        source.setCancelHandler {
            close(readEnd)  // the descriptor is closed once the source let go of it
            cancelled.signal()
        }
        #expect(source.handle == UInt(readEnd))
        source.activate()
        #expect(cancelled.wait(timeout: patience()) == .success)
        #expect(received.values == message)
        #expect(endOfFile.value == 1)
        // The first call saw every byte available; the last one, at end of file, saw 0.
        #expect(dataSeen.values.first == UInt(message.count))
        #expect(dataSeen.values.last == 0)
    }

    @Test func testPipeWrite() throws {
        let q = SQQueue(label: "write-pipe")
        let (readEnd, writeEnd) = makePipe()
        let source = try SQSource.makeWriteSource(fileDescriptor: writeEnd, queue: q)
        let room = Log<UInt>()
        let cancelled = SQSemaphore(value: 0)
        let message: [UInt8] = Array("written by a write source".utf8)
        source.setEventHandler {
            room.append(source.data)
            writeAll(writeEnd, message)
            source.cancel()
        }
        source.setCancelHandler {
            close(writeEnd)
            cancelled.signal()
        }
        #expect(source.handle == UInt(writeEnd))
        source.activate()
        #expect(cancelled.wait(timeout: patience()) == .success)
        // Read everything up to end of file (the write end is closed).
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        close(readEnd)
        #expect(received == message)
        #expect(room.values.count == 1)
        #expect(room.values[0] >= UInt(message.count))  // an empty pipe has room for it
    }

    @Test(arguments: [-1, Int32.max])
    func testDescriptorThatIsNotOpenThrows(fd: Int32) {
        #expect(sourceErrno { _ = try SQSource.makeReadSource(fileDescriptor: fd) } == EBADF)
        #expect(sourceErrno { _ = try SQSource.makeWriteSource(fileDescriptor: fd) } == EBADF)
        #expect(
            sourceErrno {
                _ = try SQSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: .all)
            } == EBADF)
    }
}
