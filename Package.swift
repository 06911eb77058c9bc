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
            pkgConfig: "liburcu-memb",
            providers: [.apt(["liburcu-dev"])]
        ),
        .target(
            name: "CQueueCore",
            dependencies: ["CURCU"],
            cSettings: [
                .define("_GNU_SOURCE"),
                .define("NDEBUG", .when(configuration: .release)),
            ],
            linkerSettings: [.linkedLibrary("pthread")]
        ),
        .target(
            name: "SwiftQueues",
            dependencies: ["CQueueCore"]
        ),
        .testTarget(
            name: "SwiftQueuesTests",
            dependencies: ["SwiftQueues"]
        ),
    ],
    cLanguageStandard: .gnu11
)
