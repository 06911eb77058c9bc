/// What a `sync` call's closure produced.
@usableFromInline
internal enum SQSyncOutcome<T> {
    case value(T)
    case error(any Error)
}
