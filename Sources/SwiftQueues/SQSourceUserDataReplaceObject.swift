import CQueueCore

/// The class of a user-data source that replaces
/// (``SQSource/makeUserDataReplaceSource(queue:)``).
/// Not public API: callers see it as `any SQSourceUserDataReplace`.
internal final class SQSourceUserDataReplaceObject: SQSource, SQSourceUserDataReplace,
    @unchecked Sendable
{
    func replace(data: UInt) {
        cq_source_merge_data(object, data)
    }
}
