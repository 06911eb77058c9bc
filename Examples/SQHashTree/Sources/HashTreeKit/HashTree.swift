// The walk, as operations on an SQOperationQueue:
//
//   - A ScanOperation per directory lists it with readdir and adds, to the same queue, a
//     HashOperation per regular file and a ScanOperation per subdirectory. Nothing recurses on a
//     thread's stack; the pool runs the scans and the hashing.
//   - Every operation is counted in one SQGroup (enter before it is added, leave from its
//     completion block, which runs also when it was cancelled), and so is every result message
//     (sent with `results.async(group:)`). The group is empty exactly when everything has been
//     scanned, hashed and aggregated; its notify then adds the final summary operation.
//   - Results go, as small messages, to one SQSerialQueue that owns the totals: no lock, no
//     atomics for them. The progress timer's handler runs on that queue too.
//   - An SQSemaphore bounds the descriptors open at once (files and directories alike).
//   - interrupt() (Ctrl-C) stops adding work and cancels the queued operations; the summary
//     then reports what was done.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
import SwiftQueues

/// The directory argument could not be opened.
public struct HashTreeOpenError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "\(path): \(String(cString: strerror(errno)))" }
}

/// One run over one directory tree. Start it once with ``start(progress:completion:)``, or use
/// ``run()`` to wait for the summary.
public final class HashTree: @unchecked Sendable {
    /// Bytes per read(2), into a buffer reused from file to file.
    public static let readChunk = 64 * 1024
    /// Errors reported one by one; the rest are counted.
    public static let errorsShown: UInt64 = 10

    public let root: String
    private let rootFD: Int32
    private let work = SQOperationQueue()
    private let results = SQSerialQueue(label: "sq-hashtree.results")
    private let group = SQGroup()
    private let openFiles: SQSemaphore
    private let buffers = BufferPool(size: HashTree.readChunk)
    private let stopping = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let errorLine: @Sendable (String) -> Void
    private var startTime: UInt64 = 0  // set before the first operation, read-only after

    // Owned by `results`: only code running on that queue reads or writes these.
    private var totals = HashTreeSummary()
    private var finished = false
    private var timer: (any SQSourceTimer)?

    /// Opens `root` (following it if it is a symbolic link, as `find -H`).
    ///
    /// - Parameters:
    ///   - maxOpen: descriptors open at once, the root's included (at least 2).
    ///   - maxConcurrent: operations running at once (default: twice the cores, at least 4).
    ///   - errorLine: where the first errors go, one line each (default: stderr, prefixed
    ///     with "sq-hashtree: ").
    public init(
        root: String, maxOpen: Int = 64, maxConcurrent: Int? = nil,
        errorLine: (@Sendable (String) -> Void)? = nil
    ) throws(HashTreeOpenError) {
        precondition(maxOpen >= 2, "HashTree: maxOpen must be at least 2")
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw HashTreeOpenError(path: root, errno: errno) }
        self.root = root
        self.rootFD = fd
        self.openFiles = SQSemaphore(value: maxOpen - 1)  // the root's descriptor is one
        self.errorLine = errorLine ?? { line in writeAll(STDERR_FILENO, "sq-hashtree: \(line)\n") }
        work.name = "sq-hashtree.work"
        // Operations that wait on the semaphore block their pool thread, and the pool answers
        // blocked threads with spare ones: a cap on running operations bounds those threads.
        // The pool still runs as many as it has cores for; the semaphore is the bound on
        // descriptors (it binds when maxOpen is below this cap).
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        work.maxConcurrentOperationCount = maxConcurrent ?? max(4, 2 * cores)
    }

    /// Starts the walk and returns at once.
    ///
    /// - Parameters:
    ///   - progressInterval: if given, `progress` is called on the results queue every
    ///     interval (milliseconds) with the totals so far and the seconds elapsed, from an
    ///     SQSource timer, until the walk ends.
    ///   - completion: called once, from the summary operation (on the pool), with the summary.
    public func start(
        progressInterval: Int? = nil,
        progress: (@Sendable (HashTreeSummary, Double) -> Void)? = nil,
        completion: @escaping @Sendable (HashTreeSummary) -> Void
    ) {
        precondition(!started.exchange(true, ordering: .relaxed), "HashTree: started twice")
        startTime = SQTime.now().uptimeNanoseconds

        if let interval = progressInterval, let progress {
            let timer = SQSource.makeTimerSource(queue: results)
            timer.setEventHandler { [weak self] in
                guard let self, !self.finished else { return }
                progress(self.totals, self.seconds())
            }
            timer.schedule(
                deadline: .now() + .milliseconds(interval),
                repeating: .milliseconds(max(interval, 1)), leeway: .milliseconds(10))
            results.sync { self.timer = timer }
            timer.activate()
        }

        add(ScanOperation(tree: self, path: []))
        // Registered after the first operation entered: on an empty group it would fire at once.
        group.notify(queue: results) { [self] in
            finished = true
            timer?.cancel()
            timer = nil
            close(rootFD)
            var final = totals
            final.elapsed = seconds()
            final.interrupted = stopping.load(ordering: .relaxed)
            let summary = final
            if summary.errors > Self.errorsShown {
                errorLine("\(summary.errors - Self.errorsShown) more errors not shown")
            }
            // The summary step is an operation of the same queue, the last one it runs.
            work.addOperation(SQBlockOperation { completion(summary) })
        }
    }

    /// Starts the walk and waits for its summary (for tests and scripts: blocks the caller).
    public func run() -> HashTreeSummary {
        let done = SQSemaphore(value: 0)
        let box = ResultBox()
        start { summary in
            box.summary = summary
            _ = done.signal()
        }
        done.wait()
        return box.summary!
    }

    /// Stops the walk early (Ctrl-C): no more operations are added, the queued ones are
    /// cancelled, files being read are abandoned. The summary follows, with `interrupted` set.
    /// Thread-safe; idempotent.
    public func interrupt() {
        if stopping.exchange(true, ordering: .relaxed) { return }
        work.cancelAllOperations()
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func seconds() -> Double {
        Double(SQTime.now().uptimeNanoseconds &- startTime) / 1e9
    }

    // MARK: - Plumbing for the operations

    /// Adds an operation, counted in the group until it has finished (cancelled or not).
    fileprivate func add(_ operation: SQOperation) {
        group.enter()
        operation.completionBlock = { [group] in group.leave() }
        work.addOperation(operation)
    }

    fileprivate enum Result {
        case directory
        case skipped
        case error(path: [UInt8], errno: Int32)
        case file(path: [UInt8], size: UInt64, hash: UInt64)
    }

    /// Sends a result to the aggregator; the message is counted in the group.
    fileprivate func post(_ result: Result) {
        results.async(group: group) { [self] in
            switch result {
            case .directory:
                totals.directories += 1
            case .skipped:
                totals.skipped += 1
            case .error(let path, let code):
                totals.errors += 1
                if totals.errors <= Self.errorsShown {
                    let where_ = HashTreeFormat.path(root: root, relative: path)
                    errorLine("\(where_): \(String(cString: strerror(code)))")
                }
            case .file(let path, let size, let hash):
                totals.addFile(path: path, size: size, contentHash: hash)
            }
        }
    }

    fileprivate func openRelative(_ path: [UInt8], _ flags: Int32) -> Int32 {
        var cPath = path.isEmpty ? Array(".".utf8) : path
        cPath.append(0)
        return cPath.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { openat(rootFD, $0.baseAddress!, flags) }
        }
    }

    fileprivate func acquireDescriptor() { openFiles.wait() }
    fileprivate func releaseDescriptor() { _ = openFiles.signal() }
    fileprivate var bufferPool: BufferPool { buffers }
}

/// Writes all of `text` to the descriptor `fd` (unbuffered; retries short writes and EINTR).
/// Returns false on an error.
@discardableResult
public func writeAll(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)
    return bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

private final class ResultBox: @unchecked Sendable {
    var summary: HashTreeSummary?  // written before the semaphore signal, read after the wait
}

/// Read buffers, reused from file to file (at most one per file being read at once).
final class BufferPool: Sendable {
    private let size: Int
    /// The free buffers' addresses (as integers, which are Sendable).
    private let free = Mutex<[UInt]>([])

    init(size: Int) { self.size = size }

    deinit {
        free.withLock { list in
            for address in list { UnsafeMutableRawPointer(bitPattern: address)!.deallocate() }
        }
    }

    func take() -> UnsafeMutableRawBufferPointer {
        let address = free.withLock { $0.popLast() }
        let pointer = address.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
            ?? .allocate(byteCount: size, alignment: 16)
        return UnsafeMutableRawBufferPointer(start: pointer, count: size)
    }

    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let address = UInt(bitPattern: buffer.baseAddress!)
        free.withLock { $0.append(address) }
    }
}

/// "dir" + "name" -> "dir/name"; the root is [] so its children are just "name".
private func join(_ directory: [UInt8], _ name: [UInt8]) -> [UInt8] {
    if directory.isEmpty { return name }
    var path = directory
    path.append(UInt8(ascii: "/"))
    path.append(contentsOf: name)
    return path
}

private let typeDirectory = UInt8(DT_DIR)
private let typeRegular = UInt8(DT_REG)
private let typeUnknown = UInt8(DT_UNKNOWN)

/// Lists one directory; adds a ScanOperation per subdirectory and a HashOperation per file.
final class ScanOperation: SQOperation, @unchecked Sendable {
    private let tree: HashTree
    private let path: [UInt8]

    init(tree: HashTree, path: [UInt8]) {
        self.tree = tree
        self.path = path
        super.init()
    }

    override func main() {
        tree.acquireDescriptor()
        let fd = tree.openRelative(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0, let dir = fdopendir(fd) else {
            let code = errno
            if fd >= 0 { close(fd) }
            tree.releaseDescriptor()
            tree.post(.error(path: path, errno: code))
            return
        }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while !isCancelled && !tree.isStopping {
            errno = 0
            guard let entry = readdir(dir) else {
                let code = errno
                if code != 0 { tree.post(.error(path: path, errno: code)) }
                break
            }
            let namePointer = UnsafeRawPointer(entry).advanced(by: nameOffset)
                .assumingMemoryBound(to: CChar.self)
            let length = strlen(namePointer)
            let name = Array(UnsafeRawBufferPointer(start: namePointer, count: length))
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }  // "." and ".."
            let child = join(path, name)
            switch type(of: entry, in: dir, name: namePointer) {
            case .directory: tree.add(ScanOperation(tree: tree, path: child))
            case .regular: tree.add(HashOperation(tree: tree, path: child))
            case .other: tree.post(.skipped)
            case .failed(let code): tree.post(.error(path: child, errno: code))
            }
        }
        closedir(dir)
        tree.releaseDescriptor()
        tree.post(.directory)
    }

    private enum EntryType { case directory, regular, other, failed(Int32) }

    /// From readdir's d_type when the file system gives it, else lstat (fstatat, no follow).
    private func type(
        of entry: UnsafeMutablePointer<dirent>, in dir: OpaquePointer,
        name: UnsafePointer<CChar>
    ) -> EntryType {
        switch entry.pointee.d_type {
        case typeDirectory: return .directory
        case typeRegular: return .regular
        case typeUnknown: break
        default: return .other  // symlink, device, FIFO, socket
        }
        var info = stat()
        if fstatat(dirfd(dir), name, &info, AT_SYMLINK_NOFOLLOW) != 0 { return .failed(errno) }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .regular
        default: return .other
        }
    }
}

/// Hashes one regular file with plain read(2) into a reused 64 KiB buffer.
final class HashOperation: SQOperation, @unchecked Sendable {
    private let tree: HashTree
    private let path: [UInt8]

    init(tree: HashTree, path: [UInt8]) {
        self.tree = tree
        self.path = path
        super.init()
    }

    override func main() {
        tree.acquireDescriptor()
        // O_NOFOLLOW: an entry replaced by a symlink since readdir is refused (ELOOP).
        // O_NONBLOCK: one replaced by a FIFO does not hang open; fstat then skips it.
        let fd = tree.openRelative(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            tree.releaseDescriptor()
            tree.post(.error(path: path, errno: code))
            return
        }
        var info = stat()
        let statError = fstat(fd, &info) != 0 ? errno : 0
        if statError != 0 || info.st_mode & S_IFMT != S_IFREG {
            let code = statError
            close(fd)
            tree.releaseDescriptor()
            tree.post(code != 0 ? .error(path: path, errno: code) : .skipped)
            return
        }

        let buffer = tree.bufferPool.take()
        var hasher = XXH64(seed: 0)
        var size: UInt64 = 0
        var failure: Int32 = 0
        var abandoned = false
        while true {
            if tree.isStopping {
                abandoned = true
                break
            }
            let n = read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                size += UInt64(n)
            } else if n == 0 {
                break
            } else if errno != EINTR {
                failure = errno
                break
            }
        }
        close(fd)
        tree.releaseDescriptor()
        tree.bufferPool.give(buffer)

        if abandoned { return }  // interrupted: the file is not counted
        if failure != 0 {
            tree.post(.error(path: path, errno: failure))
        } else {
            tree.post(.file(path: path, size: size, hash: hasher.digest()))
        }
    }
}
