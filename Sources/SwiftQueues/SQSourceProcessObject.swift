/// The class of a process source (``SQSource/makeProcessSource(identifier:eventMask:queue:)``).
/// Its typed `handle`, `data` and `mask` come from the ``SQSourceProcess`` extension.
/// Not public API: callers see it as `any SQSourceProcess`.
internal final class SQSourceProcessObject: SQSource, SQSourceProcess, @unchecked Sendable {}
