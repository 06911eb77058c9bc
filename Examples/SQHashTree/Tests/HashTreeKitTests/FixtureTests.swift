import Foundation
import HashTreeKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A small tree in a fresh temporary directory, and the summary expected for it, computed here
/// from the file list (not by walking).
private final class Fixture {
    let root: String
    var expectedFiles: UInt64 = 0
    var expectedBytes: UInt64 = 0
    var expectedDigest: UInt64 = 0
    var expectedSkipped: UInt64 = 0
    var expectedErrors: UInt64 = 0
    var expectedDirectories: UInt64 = 1
    var largest: (path: String, size: UInt64) = ("", 0)

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/sq-hashtree-test-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)

        try directory("sub")
        try directory("sub/deeper")
        try file("empty", size: 0)
        try file("a.txt", size: 5)
        try file("sub/exactly-32", size: 32)
        try file("sub/big.bin", size: 200_000)  // several 64 KiB reads, and a tail
        try file("sub/deeper/c", size: 33)
        try file("sub/deeper/chunk", size: 65_536)
        // A symbolic link (to a file and to a directory): skipped, never followed.
        #expect(symlink("a.txt", root + "/link") == 0)
        #expect(symlink("sub", root + "/sub-link") == 0)
        expectedSkipped += 2
        // An unreadable file: an error, unless we are root (root reads it anyway).
        if geteuid() != 0 {
            let path = root + "/secret"
            #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
            chmod(path, 0)
            expectedErrors += 1
        }
    }

    /// A chain of directories whose relative paths outgrow PATH_MAX (4096 with the NUL): each
    /// name is 250 bytes, so level k's path is 251k - 1 long. Levels 1-16 open; level 17 is an
    /// error (ENAMETOOLONG: every open is relative to the root), which works even as root.
    func addTooDeepChain() throws {
        let name = String(repeating: "d", count: 250)
        var fd = open(root, O_RDONLY | O_DIRECTORY)
        #expect(fd >= 0)
        for _ in 1...17 {
            #expect(mkdirat(fd, name, 0o755) == 0)
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY)
            #expect(next >= 0)
            close(fd)
            fd = next
        }
        close(fd)
        expectedDirectories += 16
        expectedErrors += 1
    }

    private func directory(_ relative: String) throws {
        try FileManager.default.createDirectory(
            atPath: root + "/" + relative, withIntermediateDirectories: false)
        expectedDirectories += 1
    }

    private func file(_ relative: String, size: Int) throws {
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ relative.count) }
        guard FileManager.default.createFile(atPath: root + "/" + relative, contents: Data(bytes))
        else { throw CocoaError(.fileWriteUnknown) }
        expectedFiles += 1
        expectedBytes += UInt64(size)
        expectedDigest &+= XXH64.hash(Array(relative.utf8), seed: XXH64.hash(bytes))
        if UInt64(size) > largest.size { largest = (relative, UInt64(size)) }
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var all: [String] { lock.withLock { stored } }
}

@Suite struct FixtureTests {
    private func check(_ summary: HashTreeSummary, _ fixture: Fixture) {
        #expect(summary.directories == fixture.expectedDirectories)
        #expect(summary.files == fixture.expectedFiles)
        #expect(summary.bytes == fixture.expectedBytes)
        #expect(summary.skipped == fixture.expectedSkipped)
        #expect(summary.errors == fixture.expectedErrors)
        #expect(summary.digest == fixture.expectedDigest)
        #expect(summary.largestPath == Array(fixture.largest.path.utf8))
        #expect(summary.largestSize == fixture.largest.size)
        #expect(!summary.interrupted)
    }

    @Test func summaryOfTheFixture() throws {
        let fixture = try Fixture()
        let errors = Lines()
        let tree = try HashTree(root: fixture.root, errorLine: { errors.append($0) })
        check(tree.run(), fixture)
        #expect(UInt64(errors.all.count) == fixture.expectedErrors)
    }

    /// The fewest descriptors and one operation at a time give the same result; so does a
    /// root spelled with a trailing slash.
    @Test func tightLimits() throws {
        let fixture = try Fixture()
        let tree = try HashTree(root: fixture.root + "/", maxOpen: 2, maxConcurrent: 1,
                                errorLine: { _ in })
        check(tree.run(), fixture)
    }

    @Test func pathsLongerThanPathMaxAreErrors() throws {
        let fixture = try Fixture()
        try fixture.addTooDeepChain()
        let errors = Lines()
        let tree = try HashTree(root: fixture.root, errorLine: { errors.append($0) })
        check(tree.run(), fixture)
        #expect(errors.all.contains { $0.hasSuffix(": File name too long") })
    }

    @Test func interruptedBeforeItStarts() throws {
        let fixture = try Fixture()
        let tree = try HashTree(root: fixture.root)
        tree.interrupt()
        let summary = tree.run()
        #expect(summary.interrupted)
        #expect(summary.files == 0)
        #expect(HashTreeFormat.summaryLines(summary, root: fixture.root).last == "interrupted")
    }

    @Test func missingRoot() {
        #expect(throws: HashTreeOpenError.self) { try HashTree(root: "/no/such/dir/sq-hashtree") }
    }
}

/// The sq-hashtree executable next to this test binary (swift build/test put them together).
private let executable: String? = {
    guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return nil }
    var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("sq-hashtree").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return nil
}()

private func runTool(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable!)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self),
            String(decoding: errData, as: UTF8.self))
}

@Suite(.enabled(if: executable != nil, "the sq-hashtree executable was not built"))
struct CommandLineTests {
    @Test func summaryLines() throws {
        let fixture = try Fixture()
        let result = try runTool([fixture.root])
        #expect(result.status == 0)
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.first == "tree         \(fixture.root)")
        #expect(lines.contains("directories  \(fixture.expectedDirectories)"))
        #expect(lines.contains("files        \(fixture.expectedFiles)"))
        #expect(lines.contains { $0.hasPrefix("bytes        \(fixture.expectedBytes) (") })
        #expect(lines.contains("errors       \(fixture.expectedErrors)"))
        #expect(lines.contains("skipped      \(fixture.expectedSkipped) (symlinks, devices, FIFOs, sockets)"))
        #expect(lines.contains("digest       \(HashTreeFormat.hex(fixture.expectedDigest))"))
        #expect(lines.contains { $0.hasPrefix("largest      \(fixture.root)/\(fixture.largest.path), ") })
        #expect(lines.contains { $0.hasPrefix("elapsed      ") })
        #expect(lines.contains { $0.hasPrefix("throughput   ") })
        #expect(!result.out.contains("\u{1B}"))  // not a terminal: no progress line
    }

    @Test func quietPrintsTheDigestOnly() throws {
        let fixture = try Fixture()
        let result = try runTool(["--quiet", "--max-open", "2", fixture.root])
        #expect(result.status == 0)
        #expect(result.out == "digest       \(HashTreeFormat.hex(fixture.expectedDigest))\n")
    }

    @Test func errorsGoToStderrAndTheWalkGoesOn() throws {
        let fixture = try Fixture()
        try fixture.addTooDeepChain()
        let result = try runTool([fixture.root])
        #expect(result.status == 0)
        #expect(result.out.contains("errors       \(fixture.expectedErrors)\n"))
        #expect(result.out.contains("files        \(fixture.expectedFiles)\n"))
        #expect(result.out.contains("digest       \(HashTreeFormat.hex(fixture.expectedDigest))\n"))
        let lines = result.err.split(separator: "\n")
        #expect(UInt64(lines.count) == fixture.expectedErrors)
        #expect(lines.allSatisfy { $0.hasPrefix("sq-hashtree: \(fixture.root)/") })
        #expect(result.err.contains(": File name too long\n"))
    }

    @Test func badPath() throws {
        let result = try runTool(["/no/such/dir/sq-hashtree"])
        #expect(result.status == 1)
        #expect(result.out.isEmpty)
        #expect(result.err == "sq-hashtree: /no/such/dir/sq-hashtree: No such file or directory\n")
    }

    @Test func notADirectory() throws {
        let result = try runTool(["/proc/self/exe"])
        #expect(result.status == 1)
        #expect(result.err.split(separator: "\n").count == 1)
    }

    @Test func usageError() throws {
        let result = try runTool(["--max-open", "1", "/"])
        #expect(result.status == 2)
        #expect(result.out.isEmpty)
    }
}
