// swift-tools-version:6.0
// SwiftQueuesMetrics: the runtime's counters (SQRuntime.counters) reported through
// swift-metrics, so a service's metrics backend (a Prometheus exporter, say) shows them.
// A package of its own so that the library itself keeps no dependencies.
import PackageDescription

let package = Package(
    name: "SwiftQueuesMetrics",
    products: [
        .library(name: "SwiftQueuesMetrics", targets: ["SwiftQueuesMetrics"])
    ],
    dependencies: [
        .package(name: "SwiftQueues", path: "../.."),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "SwiftQueuesMetrics",
            dependencies: [
                .product(name: "SwiftQueues", package: "SwiftQueues"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "SwiftQueuesMetricsTests",
            dependencies: [
                "SwiftQueuesMetrics",
                .product(name: "SwiftQueues", package: "SwiftQueues"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
