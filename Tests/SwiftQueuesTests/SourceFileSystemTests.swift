import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// File-system sources (inotify): rename, delete, writes, directory entries; bad masks throw.
@Suite struct SourceFileSystemTests {
    /// Watches `fd` for `mask` until the events seen include `expected`, running `change` once
    /// the source is registered. Returns the union of the events seen; closes `fd`.
    private func watch(
        _ fd: Int32,
        for mask: SQSource.FileSystemEvent,
        until expected: SQSource.FileSystemEvent,
        change: () -> Void
    ) throws -> SQSource.FileSystemEvent {
        let q = SQQueue(label: "file-system")
        let source: any SQSourceFileSystemObject
        do {
            source = try SQSource.makeFileSystemObjectSource(
                fileDescriptor: fd, eventMask: mask, queue: q)
        } catch {
            close(fd)
            throw error
        }
        #expect(source.handle == fd)
        #expect(source.mask == mask.subtracting(.funlock))
        let seen = Log<SQSource.FileSystemEvent>()
        let registered = SQSemaphore(value: 0)
        let done = SQSemaphore(value: 0)
        let cancelled = SQSemaphore(value: 0)
        source.setRegistrationHandler { registered.signal() }
        source.setEventHandler {
            seen.append(source.data)
            let union = seen.values.reduce(into: SQSource.FileSystemEvent()) { $0.formUnion($1) }
            if union.isSuperset(of: expected) {
                source.cancel()
                done.signal()
            }
        }
        source.setCancelHandler {
            close(fd)
            cancelled.signal()
        }
        source.activate()
        #expect(registered.wait(timeout: patience()) == .success)
        change()
        #expect(done.wait(timeout: patience()) == .success)
        #expect(cancelled.wait(timeout: patience()) == .success)
        return seen.values.reduce(into: SQSource.FileSystemEvent()) { $0.formUnion($1) }
    }

    @Test func testRenameThenDelete() throws {
        let dir = makeTemporaryDirectory()
        let path = dir + "/file"
        let renamed = dir + "/renamed"
        defer {
            unlink(path)  // left behind only if the test failed
            unlink(renamed)
            rmdir(dir)
        }
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        let seen = try watch(fd, for: [.rename, .delete, .funlock], until: [.rename, .delete]) {
            #expect(rename(path, renamed) == 0)
            #expect(unlink(renamed) == 0)
        }
        #expect(seen.isSuperset(of: [.rename, .delete]))
        #expect(seen.isSubset(of: [.rename, .delete]))  // only what was asked for
    }

    @Test func testWriteAndExtend() throws {
        let dir = makeTemporaryDirectory()
        let path = dir + "/file"
        defer {
            unlink(path)
            rmdir(dir)
        }
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        let seen = try watch(fd, for: .all, until: [.write, .extend]) {
            let writer = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
            writeAll(writer, Array("more bytes".utf8))
            close(writer)
        }
        #expect(seen.isSuperset(of: [.write, .extend]))
        #expect(!seen.contains(.delete) && !seen.contains(.rename))
    }

    @Test func testDirectoryEntries() throws {
        let dir = makeTemporaryDirectory()
        let path = dir + "/entry"
        defer {
            unlink(path)
            rmdir(dir)
        }
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        #expect(fd >= 0)
        let seen = try watch(fd, for: .write, until: .write) {
            close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
        }
        #expect(seen == .write)
    }

    @Test func testBadFileSystemMaskThrows() {
        let dir = makeTemporaryDirectory()
        defer { rmdir(dir) }
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { close(fd) }
        for mask: SQSource.FileSystemEvent in [
            [], .funlock, SQSource.FileSystemEvent(rawValue: 0x200),
        ] {
            #expect(
                sourceErrno {
                    _ = try SQSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: mask)
                } == EINVAL)
        }
    }
}
