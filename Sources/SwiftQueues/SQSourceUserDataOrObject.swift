import CQueueCore

/// The class of a user-data source that ORs (``SQSource/makeUserDataOrSource(queue:)``).
/// Not public API: callers see it as `any SQSourceUserDataOr`.
internal final class SQSourceUserDataOrObject: SQSource, SQSourceUserDataOr, @unchecked Sendable {
    func or(data: UInt) {
        cq_source_merge_data(object, data)
    }
}
