import CQueueCore

/// Options for a work item (``SQWorkItem/init(qos:flags:block:)``) or a submission
/// (``SQQueue/async(group:qos:flags:execute:)``, ``SQQueue/sync(flags:execute:)``,
/// ``SQQueue/asyncAfter(deadline:qos:flags:execute:)``,
/// ``SQGroup/notify(qos:flags:queue:execute:)-(_,_,SQQueue,_)``,
/// ``SQWorkItem/notify(qos:flags:queue:execute:)-(_,_,SQQueue,_)``).
///
/// Only ``barrier`` changes how work runs. The other flags exist so that Dispatch code ports
/// unchanged; they are accepted and ignored, because priority comes from the queue the work
/// runs on (see ``SQQoS``) and the C core propagates no QoS or context. The raw values are
/// the C core's `CQ_WORK_ITEM_*` flags (libdispatch's `DISPATCH_BLOCK_*` values).
///
/// A value type; thread-safe. Dispatch: `DispatchWorkItemFlags`.
public struct SQWorkItemFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt

    @inlinable
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// On a concurrent queue, run the work item alone: after every item submitted before it has
    /// finished and before any item submitted after it starts. The same as no flag on a serial
    /// queue; ignored on a global queue. (`CQ_WORK_ITEM_BARRIER`)
    @inlinable
    public static var barrier: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x1) }

    /// Accepted and ignored (Dispatch: do not attribute the work to the submitter's activity).
    /// (`CQ_WORK_ITEM_DETACHED`)
    @inlinable
    public static var detached: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x2) }

    /// Accepted and ignored (Dispatch: run with the creator's QoS and activity).
    /// (`CQ_WORK_ITEM_ASSIGN_CURRENT`)
    @inlinable
    public static var assignCurrentContext: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x4) }

    /// Accepted and ignored (Dispatch: run without a QoS of its own).
    /// (`CQ_WORK_ITEM_NO_QOS_CLASS`)
    @inlinable
    public static var noQoS: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x8) }

    /// Accepted and ignored (Dispatch: prefer the queue's QoS). Priority always comes from the
    /// queue here. (`CQ_WORK_ITEM_INHERIT_QOS_CLASS`)
    @inlinable
    public static var inheritQoS: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x10) }

    /// Accepted and ignored (Dispatch: prefer the work item's QoS over the queue's).
    /// (`CQ_WORK_ITEM_ENFORCE_QOS_CLASS`)
    @inlinable
    public static var enforceQoS: SQWorkItemFlags { SQWorkItemFlags(rawValue: 0x20) }

    /// Every flag above: the C core rejects the others.
    internal static var known: SQWorkItemFlags {
        [.barrier, .detached, .assignCurrentContext, .noQoS, .inheritQoS, .enforceQoS]
    }
}
