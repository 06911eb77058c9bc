import CQueueCore

/// The class of a user-data source that adds (``SQSource/makeUserDataAddSource(queue:)``).
/// Not public API: callers see it as `any SQSourceUserDataAdd`.
internal final class SQSourceUserDataAddObject: SQSource, SQSourceUserDataAdd, @unchecked Sendable {
    func add(data: UInt) {
        cq_source_merge_data(object, data)
    }
}
