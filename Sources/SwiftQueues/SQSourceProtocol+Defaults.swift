extension SQSourceProtocol {
    /// ``SQSourceProtocol/setEventHandler(qos:flags:handler:)`` with Dispatch's defaults, so
    /// that `source.setEventHandler { ... }` reads as it does with Dispatch.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceProtocol.setEventHandler(qos:flags:handler:)`.
    public func setEventHandler(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        handler: SQSourceHandler?
    ) {
        // With every argument given this resolves to the protocol requirement, not to itself.
        setEventHandler(qos: qos, flags: flags, handler: handler)
    }

    /// ``SQSourceProtocol/setCancelHandler(qos:flags:handler:)`` with Dispatch's defaults.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceProtocol.setCancelHandler(qos:flags:handler:)`.
    public func setCancelHandler(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        handler: SQSourceHandler?
    ) {
        setCancelHandler(qos: qos, flags: flags, handler: handler)
    }

    /// ``SQSourceProtocol/setRegistrationHandler(qos:flags:handler:)`` with Dispatch's defaults.
    ///
    /// Thread-safe; never blocks. Dispatch:
    /// `DispatchSourceProtocol.setRegistrationHandler(qos:flags:handler:)`.
    public func setRegistrationHandler(
        qos: SQQoS = .unspecified,
        flags: SQWorkItemFlags = [],
        handler: SQSourceHandler?
    ) {
        setRegistrationHandler(qos: qos, flags: flags, handler: handler)
    }
}
