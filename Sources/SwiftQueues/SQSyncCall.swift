/// The context pointer of a `sync` call: a frame, and the metatype that knows its type.
@usableFromInline
internal struct SQSyncCall {
    @usableFromInline
    internal let invoker: any SQSyncFrameProtocol.Type
    @usableFromInline
    internal let frame: UnsafeMutableRawPointer

    @inlinable
    internal init(invoker: any SQSyncFrameProtocol.Type, frame: UnsafeMutableRawPointer) {
        self.invoker = invoker
        self.frame = frame
    }
}
