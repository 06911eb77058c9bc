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

/// Runs one of the probe programs built next to the test bundle (Tests/Probes) and returns its
/// exit status (-signal if a signal ended it) and output.
func runProbe(_ name: String, _ arguments: [String] = []) -> (status: Int32, output: String) {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let me = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let directory = me.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        .joined(separator: "/")
    let path = directory + "/" + name
    guard access(path, X_OK) == 0 else {
        return (-1000, "probe \(path) not built (swift build builds it with the tests)")
    }
    let pipe = makePipe()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 1)
    posix_spawn_file_actions_adddup2(&actions, pipe.write, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    // The spawning thread may block signals (the C core's threads block them all): give the
    // child an empty mask and default handlers, so that its watchdog (SIGALRM) works.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, &argv, environ)
    close(pipe.write)
    guard spawned == 0 else {
        close(pipe.read)
        return (-1001, "posix_spawn \(path) failed: \(spawned)")
    }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipe.read, &chunk, chunk.count)
        if count > 0 {
            output += chunk.prefix(count)
        } else if count == 0 || errno != EINTR {
            break
        }
    }
    close(pipe.read)
    let status = reap(pid)
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : -(status & 0x7f), String(decoding: output, as: UTF8.self))
}
