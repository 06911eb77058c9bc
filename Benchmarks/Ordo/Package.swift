// swift-tools-version:6.1
// SwiftQueues against Dispatch, Foundation's OperationQueue and Swift's default executor, measured
// by ordo-one's benchmark package: percentiles of the time per operation and allocations per
// operation (counted by its malloc interposer, stable on a noisy machine).
//
//   swift package --package-path Benchmarks/Ordo benchmark        (or: make bench-ordo)
//
// Its own package, so neither the library nor sq-swift-bench (Benchmarks/) inherits the benchmark
// package's dependencies. The benchmark package needs tools 6.1 and the MallocInterposer trait
// (its malloc statistics backend on Swift 6.3; nothing to install).
import PackageDescription

let package = Package(
    name: "SwiftQueuesOrdoBenchmarks",
    dependencies: [
        .package(name: "SwiftQueues", path: "../.."),
        // ordo-one/benchmark, formerly package-benchmark (same repository, renamed; its plugin
        // warns about the old identifier).
        .package(
            url: "https://github.com/ordo-one/benchmark", from: "1.38.1",
            traits: ["MallocInterposer"]),
    ],
    targets: [
        // The plugin finds benchmark targets by their folder: Benchmarks/<target>.
        .executableTarget(
            name: "SQvsDispatch",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SwiftQueues", package: "SwiftQueues"),
            ],
            path: "Benchmarks/SQvsDispatch",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
