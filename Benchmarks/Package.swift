// swift-tools-version:6.0
// The Swift layer's benchmarks: the same closures through SwiftQueues and through Apple's
// Dispatch overlay in one process (`make bench` runs it after the C table).
import PackageDescription

let package = Package(
    name: "SwiftQueuesBenchmarks",
    dependencies: [
        .package(name: "SwiftQueues", path: ".."),
    ],
    targets: [
        // Counts malloc calls (interposes malloc/calloc/realloc/posix_memalign/aligned_alloc).
        .target(name: "MallocCount"),
        // Times a cache line's round trip between two CPUs (see its header).
        .target(name: "CoreRoundTrip"),
        .executableTarget(
            name: "sq-swift-bench",
            dependencies: [
                "MallocCount",
                "CoreRoundTrip",
                .product(name: "SwiftQueues", package: "SwiftQueues"),
                .product(name: "CQueueCore", package: "SwiftQueues"),
            ],
            path: "Sources/SwiftBench"
        ),
    ]
)
