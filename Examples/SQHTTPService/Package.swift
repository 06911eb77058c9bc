// swift-tools-version:6.0
// sq-http-service: a small HTTP service (Hummingbird 2) whose CPU work runs on Swift's default
// executor, on SwiftQueues, or on Dispatch, chosen at start-up; its timer and its signal handling
// are SwiftQueues sources. A package of its own so that users of the library inherit none of its
// dependencies.
import PackageDescription

let package = Package(
    name: "SQHTTPService",
    products: [
        .executable(name: "sq-http-service", targets: ["sq-http-service"]),
    ],
    dependencies: [
        .package(name: "SwiftQueues", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Already in Hummingbird's graph; named so that the service may import them.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.70.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
    ],
    targets: [
        // The hash, the executor placement, the request counter: no HTTP here, so tests need no server.
        .target(
            name: "HTTPServiceKit",
            dependencies: [.product(name: "SwiftQueues", package: "SwiftQueues")]
        ),
        // The command line, the routes, the timer and the signal sources.
        .executableTarget(
            name: "sq-http-service",
            dependencies: [
                "HTTPServiceKit",
                .product(name: "SwiftQueues", package: "SwiftQueues"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HTTPServiceKitTests",
            dependencies: ["HTTPServiceKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
