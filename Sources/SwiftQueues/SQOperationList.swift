/// A list of operations (dependencies, dependents) that stores its first element inline: the
/// common cases, none or one, allocate nothing. Keeps insertion order. Strong references. A
/// value type, guarded by the lock of the operation that holds it. Not public API.
///
/// Removal is O(1) amortized, in any order: a removed element leaves a hole (skipped, and
/// compacted away once holes are half the slots), and a long list finds its elements through
/// an index by identity. n operations depending on one root and removing that dependency one
/// after another cost O(n²) when each removal shifted the rest (128k: 0.84 s, Foundation
/// 0.13 s). An operation appears at most once in a list (addDependency checks).
internal struct SQOperationList {
    private var head: SQOperation?
    /// The elements after the first, in order; nil where one was removed.
    private var tail: [SQOperation?] = []
    /// How many slots of `tail` are nil.
    private var holes = 0
    /// No live element of `tail` comes before this slot.
    private var start = 0
    /// Where each element of `tail` is, once a search in a long list needed it.
    private var positions: [ObjectIdentifier: Int]?

    /// From this many slots on, elements are found through `positions`.
    private static let indexedFrom = 32

    var isEmpty: Bool { head == nil }

    var count: Int { head == nil ? 0 : 1 + tail.count - holes }

    /// The elements, in order.
    var elements: [SQOperation] {
        guard let head else { return [] }
        var result = [head]
        result.reserveCapacity(count)
        for case let operation? in tail[start...] {
            result.append(operation)
        }
        return result
    }

    mutating func append(_ operation: SQOperation) {
        if head == nil {
            head = operation  // the tail is empty then (see remove)
            return
        }
        tail.append(operation)
        if positions != nil {
            positions![ObjectIdentifier(operation)] = tail.count - 1
        }
    }

    /// Whether `operation` (by identity) is in the list. O(1) for a long list.
    func contains(_ operation: SQOperation) -> Bool {
        head === operation || lookUp(operation) != nil
    }

    /// Removes `operation` (by identity) and returns it; nil if absent. O(1) amortized for a
    /// long list.
    mutating func remove(_ operation: SQOperation) -> SQOperation? {
        if head === operation {
            let removed = head
            head = nil
            // The next element moves up into the inline slot.
            while start < tail.count {
                if let next = tail[start] {
                    head = next
                    punch(start)
                    break
                }
                start += 1
            }
            compactIfSparse()
            return removed
        }
        guard let index = slot(of: operation) else { return nil }
        let removed = tail[index]
        punch(index)
        compactIfSparse()
        return removed
    }

    /// Empties the list and returns what it held.
    mutating func take() -> SQOperationList {
        var taken = SQOperationList()
        swap(&taken, &self)
        return taken
    }

    /// The elements, in order, without an allocation for zero or one element.
    var elementsForRelease: SQOperationListElements {
        SQOperationListElements(head: head, tail: tail, start: start)
    }

    /// Calls `body` with each element, in order.
    func forEach(_ body: (SQOperation) -> Void) {
        guard let head else { return }
        body(head)
        for case let operation? in tail[start...] {
            body(operation)
        }
    }

    // MARK: - Slots

    /// Where `operation` is in `tail`. A long list builds its index on its first search, not
    /// on appends: an operation with 20k dependencies, never removed, paid for it on each
    /// (op_fan_in_20k: 620 ns an operation instead of 370).
    private mutating func slot(of operation: SQOperation) -> Int? {
        if positions == nil && tail.count - start >= Self.indexedFrom {
            rebuildPositions()
        }
        return lookUp(operation)
    }

    private func lookUp(_ operation: SQOperation) -> Int? {
        if let positions {
            return positions[ObjectIdentifier(operation)]
        }
        return tail[start...].firstIndex { $0 === operation }
    }

    /// Empties slot `index` (which holds an element).
    private mutating func punch(_ index: Int) {
        if let element = tail[index], positions != nil {
            positions![ObjectIdentifier(element)] = nil
        }
        tail[index] = nil
        holes += 1
        while start < tail.count && tail[start] == nil {
            start += 1
        }
    }

    /// Drops the holes once they are half the slots (so each removal costs O(1) amortized).
    private mutating func compactIfSparse() {
        if holes == tail.count {
            tail.removeAll(keepingCapacity: tail.count <= Self.indexedFrom)
            holes = 0
            start = 0
            positions = nil
            return
        }
        guard holes >= 16 && holes * 2 >= tail.count else { return }
        tail = tail.filter { $0 != nil }
        holes = 0
        start = 0
        if positions != nil {
            rebuildPositions()
        }
    }

    private mutating func rebuildPositions() {
        var map: [ObjectIdentifier: Int] = [:]
        map.reserveCapacity(tail.count)
        for (index, element) in tail.enumerated() {
            if let element {
                map[ObjectIdentifier(element)] = index
            }
        }
        positions = map
    }
}

/// The elements of an ``SQOperationList`` as a sequence (the first one stored inline).
internal struct SQOperationListElements: Sequence, IteratorProtocol {
    fileprivate var head: SQOperation?
    fileprivate var tail: [SQOperation?]
    private var index: Int

    fileprivate init(head: SQOperation?, tail: [SQOperation?], start: Int) {
        self.head = head
        self.tail = tail
        index = start
    }

    mutating func next() -> SQOperation? {
        if let head {
            self.head = nil
            return head
        }
        while index < tail.count {
            defer { index += 1 }
            if let operation = tail[index] {
                return operation
            }
        }
        return nil
    }
}
