// sq-hashtree: hashes every regular file under a directory tree in parallel with SwiftQueues
// and prints a summary; the Swift twin of the C example cq-hashtree (same digest).
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ArgumentParser
import HashTreeKit
import SwiftQueues

@main
struct SQHashTreeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sq-hashtree",
        abstract: "Hash every regular file under a directory tree, in parallel, with SwiftQueues.",
        discussion: """
            Each file's contents are hashed with XXH64; its entry is XXH64(relative path, \
            seed: content hash), and the tree's digest is the sum of the entries modulo 2^64 \
            (the same digest as the C example cq-hashtree). Symbolic links, devices, FIFOs \
            and sockets are skipped; unreadable entries are counted as errors and the walk \
            goes on. Ctrl-C stops the walk and prints what was done (exit status 130).
            """)

    @Argument(help: "The directory to hash (symbolic links below it are not followed).")
    var directory: String = "/usr/include"

    @Flag(name: .shortAndLong, help: "No progress line; print only the digest line.")
    var quiet = false

    @Option(name: .customLong("max-open"), help: "The most descriptors open at once (files and directories, at least 2).")
    var maxOpen: Int = 64

    @Option(
        name: .customLong("progress-interval-ms"),
        help: "Milliseconds between updates of the progress line (shown only on a terminal).")
    var progressIntervalMs: Int = 200

    func validate() throws {
        guard maxOpen >= 2 else { throw ValidationError("--max-open must be at least 2.") }
        guard progressIntervalMs >= 1 else {
            throw ValidationError("--progress-interval-ms must be at least 1.")
        }
    }

    /// As ArgumentParser's, except that usage errors exit with status 2 (as cq-hashtree).
    static func main() {
        let command: SQHashTreeCommand
        do {
            command = try parse()
        } catch {
            if exitCode(for: error) == .validationFailure {
                writeAll(STDERR_FILENO, fullMessage(for: error) + "\n")
                Glibc.exit(2)
            }
            exit(withError: error)
        }
        command.start()
    }

    func start() -> Never {
        let tree: HashTree
        do {
            tree = try HashTree(root: directory, maxOpen: maxOpen)
        } catch {
            writeAll(STDERR_FILENO, "sq-hashtree: \(error)\n")
            Glibc.exit(1)
        }

        // Ctrl-C: a signal source (not a signal handler); its handler cancels the walk.
        do {
            let sigint = try SQSource.makeSignalSource(signal: SIGINT, queue: .main)
            sigint.setEventHandler { tree.interrupt() }
            sigint.activate()
            Keep.signalSource = sigint
        } catch {
            writeAll(STDERR_FILENO, "sq-hashtree: cannot watch SIGINT: \(error)\n")
        }

        let showProgress = !quiet && isatty(STDOUT_FILENO) == 1
        let root = directory
        let quiet = self.quiet
        tree.start(
            progressInterval: showProgress ? progressIntervalMs : nil,
            progress: { totals, seconds in
                let line = HashTreeFormat.progressLine(
                    files: totals.files, bytes: totals.bytes, seconds: seconds)
                writeAll(STDOUT_FILENO, "\r\(line)\u{1B}[K")
            },
            completion: { summary in
                var text = showProgress ? "\r\u{1B}[K" : ""  // erase the progress line
                for line in HashTreeFormat.summaryLines(summary, root: root, quiet: quiet) {
                    text += line + "\n"
                }
                let written = writeAll(STDOUT_FILENO, text)
                Glibc.exit(summary.interrupted ? 130 : (written ? 0 : 1))
            })
        SQQueue.runMain()
    }
}

/// Keeps the signal source alive for the life of the process.
enum Keep {
    nonisolated(unsafe) static var signalSource: (any SQSourceSignal)?
}
