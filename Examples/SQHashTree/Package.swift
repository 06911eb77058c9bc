// swift-tools-version:6.0
// sq-hashtree: the Swift twin of the C example cq-hashtree, built on SwiftQueues.
// A package of its own so that users of the library inherit none of its dependencies.
import PackageDescription

let package = Package(
    name: "SQHashTree",
    products: [
        .executable(name: "sq-hashtree", targets: ["sq-hashtree"]),
        .library(name: "HashTreeKit", targets: ["HashTreeKit"]),
    ],
    dependencies: [
        .package(name: "SwiftQueues", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // All the logic: XXH64, the walk as operations, the summary's formatting.
        .target(
            name: "HashTreeKit",
            dependencies: [.product(name: "SwiftQueues", package: "SwiftQueues")]
        ),
        // The command line: options, the progress line, Ctrl-C, the exit status.
        .executableTarget(
            name: "sq-hashtree",
            dependencies: [
                "HashTreeKit",
                .product(name: "SwiftQueues", package: "SwiftQueues"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "HashTreeKitTests",
            dependencies: ["HashTreeKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
