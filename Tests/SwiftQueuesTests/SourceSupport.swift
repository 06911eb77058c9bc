import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Helpers for the Source*Tests files: pipes, child processes, temporary directories.

/// A pipe (close-on-exec): `read` and `write` ends. The caller closes both.
func makePipe() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    let result = pipe(&fds)
    precondition(result == 0, "pipe failed: errno \(errno)")
    for fd in fds {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    return (fds[0], fds[1])
}

/// Starts `/bin/true` (it exits at once) and returns its pid; reap it with ``reap(_:)``.
func spawnTrue() -> pid_t {
    var pid: pid_t = 0
    let path = "/bin/true"
    var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
    defer { free(argv[0]) }
    let result = posix_spawn(&pid, path, nil, nil, &argv, environ)
    precondition(result == 0, "posix_spawn /bin/true failed: \(result)")
    return pid
}

/// Waits for the child `pid` to exit and reaps it; returns its exit status.
@discardableResult
func reap(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status
}

/// A new, empty directory under /tmp; the caller removes it.
func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/sqsource-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: errno \(errno)")
    return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

/// Writes `bytes` to `fd` in full.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        precondition(n > 0, "write failed: errno \(errno)")
        offset += n
    }
}

/// The errno of the ``SQSourceError`` `body` throws, or nil (and a recorded issue) if it
/// throws nothing or another error.
func sourceErrno(
    _ body: () throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Int32? {
    do {
        try body()
        Issue.record("expected an SQSourceError", sourceLocation: sourceLocation)
        return nil
    } catch let error as SQSourceError {
        return error.errno
    } catch {
        Issue.record("expected an SQSourceError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
