/// The key-path forms of `willChangeValue` / `didChangeValue`, so that asynchronous operations
/// written with `willChangeValue(for: \.isFinished)` compile and work unchanged.
/// ``SQOperation`` conforms; there is nothing to implement.
///
/// Foundation: the `_KeyValueCodingAndObserving` methods of `NSObject`.
public protocol SQOperationKeyValueChanges: AnyObject {}

extension SQOperation: SQOperationKeyValueChanges {}

extension SQOperationKeyValueChanges where Self: SQOperation {
    /// Does nothing (see ``SQOperation/willChangeValue(forKey:)``).
    /// Foundation: `NSObject.willChangeValue(for:)`.
    public func willChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {}

    /// As ``SQOperation/didChangeValue(forKey:)``: the operation reads its state properties
    /// again and acts on them, whatever the key path.
    ///
    /// Thread-safe. Foundation: `NSObject.didChangeValue(for:)`.
    public func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        resynchronize()
    }
}
