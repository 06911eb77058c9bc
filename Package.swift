// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftQueues",
    products: [
        .library(name: "SwiftQueues", targets: ["SwiftQueues"]),
        .library(name: "CQueueCore", targets: ["CQueueCore"]),
    ],
    targets: [
        // liburcu (Debian: liburcu-dev), used by the C core only.
        .systemLibrary(
            name: "CURCU",
            pkgConfig: "liburcu-bp",
            providers: [.apt(["liburcu-dev"])]
        ),
        .target(
            name: "CQueueCore",
            dependencies: ["CURCU"],
            cSettings: [
                .define("_GNU_SOURCE"),
                // Internal headers are included by their path from Sources/CQueueCore
                // ("scheduler/pool_internal.h"); the .c files sit in one folder per layer.
                .headerSearchPath("."),
                .define("NDEBUG", .when(configuration: .release)),
            ],
            // CURCU's pkg-config entry (liburcu-bp) names only the RCU flavour; the lock-free
            // stack lives in liburcu-cds, and SwiftPM ignores a module map's `link` lines for
            // C targets, so it is named here.
            linkerSettings: [.linkedLibrary("urcu-cds"), .linkedLibrary("pthread")]
        ),
        .target(
            name: "SwiftQueues",
            dependencies: ["CQueueCore"]
        ),
        .testTarget(
            name: "SwiftQueuesTests",
            dependencies: ["SwiftQueues"]
        ),
        // Programs MainActorTests runs as child processes: a synchronous main that ends in
        // SQQueue.runMain(), and an async main. Not declared as products.
        .executableTarget(
            name: "SQProbeSyncMain",
            dependencies: ["SwiftQueues"],
            path: "Tests/Probes/SyncMain"
        ),
        .executableTarget(
            name: "SQProbeAsyncMain",
            dependencies: ["SwiftQueues"],
            path: "Tests/Probes/AsyncMain"
        ),
        // A program that ends in libdispatch's dispatchMain(), which DispatchMainTests runs as a
        // child process.
        .executableTarget(
            name: "SQProbeDispatchMain",
            dependencies: ["SwiftQueues"],
            path: "Tests/Probes/DispatchMain"
        ),
    ],
    cLanguageStandard: .gnu11
)
