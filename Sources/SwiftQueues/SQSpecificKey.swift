/// A key for per-queue values of type `T` (``SQQueue/setSpecific(key:value:)``). Keys are
/// compared by identity: create one per purpose, typically as a `static let`.
///
/// A queue that holds a value for a key keeps the key alive, so a key's identity is never
/// reused while a value is stored under it.
///
/// Thread-safe (immutable). Dispatch: `DispatchSpecificKey<T>`.
public final class SQSpecificKey<T>: Sendable {
    /// Creates a new, distinct key.
    public init() {}
}
