/// The class of a read source (``SQSource/makeReadSource(fileDescriptor:queue:)``).
/// Not public API: callers see it as `any SQSourceRead`.
internal final class SQSourceReadObject: SQSource, SQSourceRead, @unchecked Sendable {}
