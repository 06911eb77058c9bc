// The totals of a walk and the lines that report them (the same lines as cq-hashtree's).

/// What a walk found. Directories, skipped entries and errors do not enter the digest.
public struct HashTreeSummary: Sendable, Equatable {
    /// Directories opened and listed, the root included.
    public var directories: UInt64 = 0
    /// Regular files hashed.
    public var files: UInt64 = 0
    /// Bytes read from them.
    public var bytes: UInt64 = 0
    /// Entries that could not be opened, listed or read.
    public var errors: UInt64 = 0
    /// Symbolic links, devices, FIFOs and sockets (never followed nor read).
    public var skipped: UInt64 = 0
    /// The sum, modulo 2^64, of XXH64(relative path, seed: XXH64(contents)) over the files.
    public var digest: UInt64 = 0
    /// The largest file's path relative to the root (ties: the bytewise smaller path).
    public var largestPath: [UInt8]? = nil
    public var largestSize: UInt64 = 0
    /// Seconds from the start of the walk to its end.
    public var elapsed: Double = 0
    /// Whether the walk was stopped early (Ctrl-C): the totals cover what was done.
    public var interrupted = false

    public init() {}

    /// Adds a hashed file (path relative to the root, as bytes).
    public mutating func addFile(path: [UInt8], size: UInt64, contentHash: UInt64) {
        files += 1
        bytes &+= size
        digest &+= XXH64.hash(path, seed: contentHash)
        if let largest = largestPath {
            if size > largestSize
                || (size == largestSize && path.lexicographicallyPrecedes(largest))
            {
                largestPath = path
                largestSize = size
            }
        } else {
            largestPath = path
            largestSize = size
        }
    }
}

/// Formatting shared by the summary and the progress line.
public enum HashTreeFormat {
    /// `value` with `decimals` digits after the point, like printf's `%.Nf`.
    public static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return "\(value)" }
        let n = UInt64(scaled)
        let divisor = UInt64(scale)
        var text = String(n / divisor)
        if decimals > 0 {
            var fraction = String(n % divisor)
            while fraction.count < decimals { fraction = "0" + fraction }
            text += "." + fraction
        }
        return negative && n != 0 ? "-" + text : text
    }

    /// "114839647<suffix> (109.5 MiB)"; below 1024 just the number and suffix.
    public static func bytes(_ count: UInt64, suffix: String = "") -> String {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var text = "\(count)\(suffix)"
        if count >= 1024 {
            var value = Double(count) / 1024
            var unit = 0
            while value >= 1024 && unit + 1 < units.count {
                value /= 1024
                unit += 1
            }
            text += " (\(fixed(value, 1)) \(units[unit]))"
        }
        return text
    }

    /// The root and a relative path as one path, without doubling a trailing '/'.
    public static func path(root: String, relative: [UInt8]) -> String {
        if relative.isEmpty { return root }
        let rel = String(decoding: relative, as: UTF8.self)
        return root.hasSuffix("/") ? root + rel : root + "/" + rel
    }

    /// 16 lower-case hex digits.
    public static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The summary's lines; `quiet` gives only the digest line (as cq-hashtree --quiet).
    public static func summaryLines(
        _ s: HashTreeSummary, root: String, quiet: Bool = false
    ) -> [String] {
        var lines: [String] = []
        if quiet {
            lines.append("digest       \(hex(s.digest))")
        } else {
            let seconds = s.elapsed > 0 ? s.elapsed : 1e-9
            lines.append("tree         \(root)")
            lines.append("directories  \(s.directories)")
            lines.append("files        \(s.files)")
            lines.append("bytes        \(bytes(s.bytes))")
            lines.append("errors       \(s.errors)")
            lines.append("skipped      \(s.skipped) (symlinks, devices, FIFOs, sockets)")
            if let largest = s.largestPath {
                lines.append(
                    "largest      \(path(root: root, relative: largest)), "
                        + bytes(s.largestSize, suffix: " bytes"))
            } else {
                lines.append("largest      -")
            }
            lines.append("digest       \(hex(s.digest))")
            lines.append("elapsed      \(fixed(s.elapsed, 3)) s")
            lines.append(
                "throughput   \(fixed(Double(s.bytes) / 1e6 / seconds, 1)) MB/s, "
                    + "\(fixed(Double(s.files) / seconds, 0)) files/s")
        }
        if s.interrupted { lines.append("interrupted") }
        return lines
    }

    /// The live progress line (no line end): "files 1234  bytes 56.7 MiB  12.3 MB/s".
    public static func progressLine(files: UInt64, bytes count: UInt64, seconds: Double) -> String {
        let rate = seconds > 0 ? Double(count) / 1e6 / seconds : 0
        return "files \(files)  bytes \(bytes(count))  \(fixed(rate, 1)) MB/s"
    }
}
