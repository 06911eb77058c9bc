/// As `precondition`, but the message is printed in optimized builds too (`precondition`
/// drops it there, leaving "precondition failure"): misuse stops with the reason the docs
/// promise. Found by a user-side probe (`SQSemaphore(value: -1)` in a release build).
@usableFromInline @inline(__always)
internal func sqRequire(
    _ condition: Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if _slowPath(!condition) {
        fatalError(message(), file: file, line: line)
    }
}
