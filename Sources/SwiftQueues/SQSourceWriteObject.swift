/// The class of a write source (``SQSource/makeWriteSource(fileDescriptor:queue:)``).
/// Not public API: callers see it as `any SQSourceWrite`.
internal final class SQSourceWriteObject: SQSource, SQSourceWrite, @unchecked Sendable {}
