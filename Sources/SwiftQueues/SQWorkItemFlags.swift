/// Options for submitting a work item (``SQQueue/async(group:flags:execute:)``,
/// ``SQQueue/sync(flags:execute:)``).
///
/// Dispatch: `DispatchWorkItemFlags` (only `.barrier`; the QoS flags have no equivalent).
public struct SQWorkItemFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// On a concurrent queue, run the work item alone: after every item submitted before it has
    /// finished and before any item submitted after it starts. The same as no flag on a serial
    /// queue; ignored on a global queue.
    @inlinable
    public static var barrier: SQWorkItemFlags { SQWorkItemFlags(rawValue: 1 << 0) }
}
