/// The result of a wait with a timeout (``SQGroup/wait(timeout:)``,
/// ``SQSemaphore/wait(timeout:)``).
///
/// Dispatch: `DispatchTimeoutResult`.
public enum SQTimeoutResult: Sendable, Hashable {
    /// The wait ended because the condition was met.
    case success
    /// The timeout passed first.
    case timedOut
}
