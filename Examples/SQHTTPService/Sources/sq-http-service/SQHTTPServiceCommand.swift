import ArgumentParser
import HTTPServiceKit
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import SwiftQueues
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Placement: ExpressibleByArgument {}

@main
struct SQHTTPServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sq-http-service",
        abstract: "An HTTP service whose CPU work runs on a chosen executor.",
        discussion: """
            POST /hash returns the hex digest of the body (MixHash, CPU-bound); GET /health \
            returns "ok". SIGTERM or SIGINT stops accepting, finishes the requests in flight, \
            prints a one-line summary and exits 0; if they are not done within \
            --shutdown-timeout seconds (a client that stalls mid-request), or on a second \
            signal, it says so and exits 1.
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (printed on the 'listening on' line).")
    var port = 8080

    @Option(help: "Where the hashing runs: default (Swift's executor), swiftqueues or dispatch.")
    var executor: Placement = .swiftqueues

    @Option(help: "Rounds of the hash over the body (more is slower).")
    var rounds = MixHash.defaultRounds

    @Option(help: "Largest body accepted, in bytes.")
    var maxBody = 1 << 20

    @Flag(help: "Do not print the per-second request count.")
    var quiet = false

    @Option(help: "Seconds the graceful shutdown may take before the process exits anyway.")
    var shutdownTimeout = 10.0

    func run() async throws {
        let stats = RequestStats()
        let placement = executor
        let rounds = self.rounds
        let maxBody = self.maxBody
        var logger = Logger(label: "sq-http-service")
        logger.logLevel = .warning

        let router = Router()
        router.get("health") { _, _ -> String in
            stats.countHealth()
            return "ok\n"
        }
        router.post("hash") { request, _ -> String in
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: maxBody)
            } catch {
                stats.countFailure()
                throw error
            }
            // Off the event loop: the body is a Sendable value, the hash runs where --executor says.
            let digest = await placement.run {
                body.withUnsafeReadableBytes { MixHash.hexDigest($0, rounds: rounds) }
            }
            stats.countHash()
            return digest + "\n"
        }

        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "sq-http-service"),
            onServerRunning: { channel in
                let address = channel.localAddress
                let shown = "\(address?.ipAddress ?? "?"):\(address?.port ?? -1)"
                printLine("sq-http-service: listening on \(shown), executor \(placement.rawValue)")
            },
            logger: logger
        )
        // No signals for ServiceLifecycle: SwiftQueues' signal sources below trigger the shutdown.
        let group = ServiceGroup(services: [app], logger: logger)

        // All source handlers run one at a time on this queue.
        let control = SQSerialQueue(label: "sq-http-service.control")

        // Background job: once a second, record (and unless --quiet, print) the request rate.
        let timer = SQSource.makeTimerSource(queue: control)
        timer.schedule(deadline: .now() + 1.0, repeating: 1.0, leeway: .milliseconds(50))
        timer.setEventHandler {
            let (total, perSecond) = stats.tick()
            if !quiet {
                printLine("sq-http-service: \(perSecond) req/s, \(total) total")
            }
        }
        timer.activate()

        // The graceful shutdown's limit: a client that sent a request's headers and stalls in its
        // body held the shutdown (and the process) for ever, and further signals changed nothing
        // (found by a user-side probe). Armed by the first signal; a second signal ends it too.
        let start = ContinuousClock.now
        @Sendable func secondsSinceStart() -> Double {
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        let shutdownLimit = SQSource.makeTimerSource(queue: control)
        shutdownLimit.schedule(deadline: .distantFuture)
        shutdownLimit.setEventHandler {
            printLine("sq-http-service: requests still in flight \(shutdownTimeout) s after the "
                + "signal; exiting. " + stats.summary(placement: placement, seconds: secondsSinceStart()))
            exitProcess(1)
        }
        shutdownLimit.activate()
        let signalsSeen = Atomic<Int>(0)
        let timeout = shutdownTimeout

        // Graceful shutdown on SIGTERM and SIGINT: stop accepting, let the requests in flight
        // finish (ServiceLifecycle's graceful shutdown quiesces the server), then return below.
        var signalSources: [any SQSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT] {
            let source = try SQSource.makeSignalSource(signal: signalNumber, queue: control)
            source.setEventHandler {
                if signalsSeen.add(1, ordering: .relaxed).newValue > 1 {
                    printLine("sq-http-service: second signal; exiting. "
                        + stats.summary(placement: placement, seconds: secondsSinceStart()))
                    exitProcess(1)
                }
                shutdownLimit.schedule(deadline: .now() + timeout)
                Task { await group.triggerGracefulShutdown() }
            }
            source.activate()
            signalSources.append(source)
        }

        try await group.run()
        let seconds = secondsSinceStart()

        timer.cancel()
        shutdownLimit.cancel()
        for source in signalSources { source.cancel() }
        printLine(stats.summary(placement: placement, seconds: seconds))
    }
}

/// Ends the process now with `status` (the C library's exit: inside the command, `exit` names
/// ArgumentParser's).
func exitProcess(_ status: Int32) -> Never {
    exit(status)
}

/// Writes `line` and a newline to standard output at once (unbuffered, so a pipe sees it now).
@Sendable func printLine(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if written <= 0 { break }
            offset += written
        }
    }
}
