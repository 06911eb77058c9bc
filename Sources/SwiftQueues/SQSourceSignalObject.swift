/// The class of a signal source (``SQSource/makeSignalSource(signal:queue:)``).
/// Not public API: callers see it as `any SQSourceSignal`.
internal final class SQSourceSignalObject: SQSource, SQSourceSignal, @unchecked Sendable {}
