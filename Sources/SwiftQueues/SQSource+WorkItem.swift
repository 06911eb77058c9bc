import CQueueCore

extension SQSource {
    /// See ``SQSourceProtocol/setEventHandler(handler:)``.
    public func setEventHandler(handler: SQWorkItem) {
        // A barrier item runs as a barrier, as it does when submitted.
        cq_source_set_handler_barrier(object, handler.flags.contains(.barrier))
        cq_source_set_event_handler_ctx_f(
            object, sqSourceWorkItemContext(handler), sqPerformSourceWorkItem,
            sqReleaseSourceWorkItem)
    }

    /// See ``SQSourceProtocol/setCancelHandler(handler:)``.
    public func setCancelHandler(handler: SQWorkItem) {
        cq_source_set_cancel_handler_ctx_f(
            object, sqSourceWorkItemContext(handler), sqPerformSourceWorkItem,
            sqReleaseSourceWorkItem)
    }

    /// See ``SQSourceProtocol/setRegistrationHandler(handler:)``.
    public func setRegistrationHandler(handler: SQWorkItem) {
        cq_source_set_registration_handler_ctx_f(
            object, sqSourceWorkItemContext(handler), sqPerformSourceWorkItem,
            sqReleaseSourceWorkItem)
    }
}

// A work item handler is the C item itself, retained as the handler's context: the source
// performs it as libdispatch performs a dispatch_block_t handler, and releases it through the
// destructor once the handler can no longer be called (see SQSource+HandlerContext.swift). The
// item's closure lives with the C item, so the Swift wrapper may be dropped at once.

/// The C item of `item`, retained once, as the context of a `cq_source_set_*_handler_ctx_f`
/// call whose destructor is ``sqReleaseSourceWorkItem``.
private func sqSourceWorkItemContext(_ item: SQWorkItem) -> UnsafeMutableRawPointer {
    cq_retain(sqObject(item.handle))
    return sqObject(item.handle)
}

/// The C handler for ``sqSourceWorkItemContext`` contexts: performs the item (a cancelled item
/// returns at once).
private let sqPerformSourceWorkItem: cq_function_t = { context in
    // safety: `context` is a C work item retained by sqSourceWorkItemContext; the C core
    // releases it (sqReleaseSourceWorkItem) only once no call of the handler can be running.
    cq_work_item_perform(OpaquePointer(context!))
}

/// The C destructor for ``sqSourceWorkItemContext`` contexts: drops the source's reference.
private let sqReleaseSourceWorkItem: cq_function_t = { context in
    // safety: called exactly once per context, after the last call of the handler; balances
    // the cq_retain of sqSourceWorkItemContext.
    cq_release(context)
}
