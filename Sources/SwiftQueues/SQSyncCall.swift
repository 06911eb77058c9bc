/// The context pointer of a `sync` call: a frame, and the function that runs it.
///
/// `invoke` is a closure without captures, made where `sync` is specialized (it names
/// `SQSyncFrame<T>` with the caller's `T`), so calling it costs no allocation and no generic
/// metadata lookup. (Reaching the frame's type through a metatype instead made the C trampoline
/// run the unspecialized generic code, which looks metadata up in the runtime's cache twice per
/// call: half of `sync`'s time.)
@usableFromInline
internal struct SQSyncCall {
    @usableFromInline
    internal let invoke: (UnsafeMutableRawPointer) -> Void
    @usableFromInline
    internal let frame: UnsafeMutableRawPointer

    @inlinable
    internal init(invoke: @escaping (UnsafeMutableRawPointer) -> Void, frame: UnsafeMutableRawPointer) {
        self.invoke = invoke
        self.frame = frame
    }
}
