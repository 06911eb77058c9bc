import CQueueCore

// How a source handler closure travels through the C core: boxed once in an ``SQWorkBox``
// whose retained reference is the handler's own context (`cq_source_set_*_handler_ctx_f`). The
// C core calls ``sqCallSourceHandler`` any number of times, then ``sqReleaseSourceHandler``
// exactly once, when the handler can no longer be called and no call of it is running: after
// it was replaced, after a registration or cancel handler ran, after the cancel handler for the
// event handler, or when the source is freed. That release is what breaks a cycle between a
// source and a handler that captures it.

/// A retained box for `handler`, as the context of a `cq_source_set_*_handler_ctx_f` call whose
/// destructor is ``sqReleaseSourceHandler``.
internal func sqSourceHandlerContext(_ handler: @escaping SQSourceHandler)
    -> UnsafeMutableRawPointer
{
    Unmanaged.passRetained(SQWorkBox(handler)).toOpaque()
}

/// The C handler for ``sqSourceHandlerContext`` contexts: calls the closure, keeps the box.
internal let sqCallSourceHandler: cq_function_t = { context in
    // safety: `context` is a box from sqSourceHandlerContext; the C core releases it (through
    // sqReleaseSourceHandler) only once no call of the handler can be running, so it is alive.
    Unmanaged<SQWorkBox>.fromOpaque(context!).takeUnretainedValue().work()
}

/// The C destructor for ``sqSourceHandlerContext`` contexts: drops the box's reference.
internal let sqReleaseSourceHandler: cq_function_t = { context in
    // safety: the C core calls the destructor exactly once per context, after the last call of
    // the handler; this balances the retain of sqSourceHandlerContext.
    Unmanaged<SQWorkBox>.fromOpaque(context!).release()
}
