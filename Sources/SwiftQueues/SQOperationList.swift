/// A short list of operations (dependencies, dependents) that stores its first element
/// inline: the common cases, none or one, allocate nothing. Keeps insertion order. Strong
/// references. A value type, guarded by the lock of the operation that holds it. Not public
/// API.
internal struct SQOperationList {
    private var head: SQOperation?
    private var tail: [SQOperation] = []

    var isEmpty: Bool { head == nil }

    var count: Int { head == nil ? 0 : 1 + tail.count }

    /// The elements, in order.
    var elements: [SQOperation] {
        guard let head else { return [] }
        return [head] + tail
    }

    mutating func append(_ operation: SQOperation) {
        if head == nil {
            head = operation
        } else {
            tail.append(operation)
        }
    }

    /// Whether `operation` (by identity) is in the list. O(n).
    func contains(_ operation: SQOperation) -> Bool {
        head === operation || tail.contains { $0 === operation }
    }

    /// Removes the first occurrence of `operation` (by identity) and returns it; nil if absent.
    /// O(n).
    mutating func remove(_ operation: SQOperation) -> SQOperation? {
        if head === operation {
            let removed = head
            head = tail.isEmpty ? nil : tail.removeFirst()
            return removed
        }
        guard let index = tail.firstIndex(where: { $0 === operation }) else { return nil }
        return tail.remove(at: index)
    }

    /// Empties the list and returns what it held.
    mutating func take() -> SQOperationList {
        var taken = SQOperationList()
        swap(&taken, &self)
        return taken
    }

    /// The elements, in order, without an allocation for zero or one element.
    var elementsForRelease: SQOperationListElements {
        SQOperationListElements(head: head, tail: tail)
    }

    /// Calls `body` with each element, in order.
    func forEach(_ body: (SQOperation) -> Void) {
        guard let head else { return }
        body(head)
        for operation in tail {
            body(operation)
        }
    }
}

/// The elements of an ``SQOperationList`` as a sequence (the first one stored inline).
internal struct SQOperationListElements: Sequence, IteratorProtocol {
    fileprivate var head: SQOperation?
    fileprivate var tail: [SQOperation]
    private var index = 0

    fileprivate init(head: SQOperation?, tail: [SQOperation]) {
        self.head = head
        self.tail = tail
    }

    mutating func next() -> SQOperation? {
        if let head {
            self.head = nil
            return head
        }
        guard index < tail.count else { return nil }
        defer { index += 1 }
        return tail[index]
    }
}
