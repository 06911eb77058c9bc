import CQueueCore

/// A list of operations (dependencies, dependents) that stores its first element inline: the
/// common cases, none or one, allocate nothing. Keeps insertion order. Holds whatever its
/// elements hold: strong references (``SQOperationList``, an operation's dependencies) or
/// unretained ones (``SQDependentList``, an operation's dependents). A value type, guarded by
/// the lock of the operation that holds it. Not public API.
///
/// Removal is O(1) amortized, in any order: a removed element leaves a hole (skipped, and
/// compacted away once holes are half the slots), and a long list finds its elements through
/// an index by identity. n operations depending on one root and removing that dependency one
/// after another cost O(n²) when each removal shifted the rest (128k: 0.84 s, Foundation
/// 0.13 s). An operation appears at most once in a list (addDependency checks).
internal typealias SQOperationList = SQOperationListOf<SQOperation>

/// An operation's dependents: unretained, so that a dependency and its dependent that never
/// run do not keep each other alive (the dependent holds its dependency; a dependent that goes
/// away takes itself out of its dependencies' lists first: see `SQOperation.deinit`).
internal typealias SQDependentList = SQOperationListOf<SQDependentReference>

/// What an ``SQOperationListOf`` can hold: something that names an operation.
internal protocol SQOperationListElement {
    /// The operation's address: the identity the list searches by.
    var operationIdentity: UnsafeRawPointer { get }
}

extension SQOperation: SQOperationListElement {
    var operationIdentity: UnsafeRawPointer { SQOperation.identity(of: self) }

    /// The identity lists search by: the object's address.
    static func identity(of operation: SQOperation) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(operation).toOpaque())
    }
}

/// A dependent, unretained (see ``SQDependentList``).
internal struct SQDependentReference: SQOperationListElement {
    let reference: Unmanaged<SQOperation>

    init(_ operation: SQOperation) {
        reference = Unmanaged.passUnretained(operation)
    }

    var operationIdentity: UnsafeRawPointer { UnsafeRawPointer(reference.toOpaque()) }
}

internal struct SQOperationListOf<Element: SQOperationListElement> {
    private var head: Element?
    /// The elements after the first, in order; nil where one was removed.
    private var tail: [Element?] = []
    /// How many slots of `tail` are nil.
    private var holes = 0
    /// No live element of `tail` comes before this slot.
    private var start = 0
    /// Where each element of `tail` is, once a search in a long list needed it.
    private var positions: [UnsafeRawPointer: Int]?

    /// From this many slots on, elements are found through `positions`.
    private var indexedFrom: Int { 32 }

    var isEmpty: Bool { head == nil }

    var count: Int { head == nil ? 0 : 1 + tail.count - holes }

    /// The elements, in order.
    var elements: [Element] {
        guard let head else { return [] }
        var result = [head]
        result.reserveCapacity(count)
        for case let operation? in tail[start...] {
            result.append(operation)
        }
        return result
    }

    mutating func append(_ operation: Element) {
        if head == nil {
            head = operation  // the tail is empty then (see remove)
            return
        }
        tail.append(operation)
        if positions != nil {
            positions![operation.operationIdentity] = tail.count - 1
        }
    }

    /// Whether `operation` (by identity) is in the list. O(1) for a long list.
    func contains(_ operation: SQOperation) -> Bool {
        let identity = SQOperation.identity(of: operation)
        return head?.operationIdentity == identity || lookUp(identity) != nil
    }

    /// Removes `operation` (by identity) and returns its element; nil if absent. O(1)
    /// amortized for a long list.
    mutating func remove(_ operation: SQOperation) -> Element? {
        remove(identity: SQOperation.identity(of: operation))
    }

    /// Removes the element of the operation at `identity`; nil if absent.
    mutating func remove(identity: UnsafeRawPointer) -> Element? {
        if head?.operationIdentity == identity {
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
        guard let index = slot(of: identity) else { return nil }
        let removed = tail[index]
        punch(index)
        compactIfSparse()
        return removed
    }

    /// Empties the list and returns what it held.
    mutating func take() -> Self {
        var taken = Self()
        swap(&taken, &self)
        return taken
    }

    /// The elements, in order, without an allocation for zero or one element.
    var elementsForRelease: SQOperationListElements<Element> {
        SQOperationListElements(head: head, tail: tail, start: start)
    }

    /// Calls `body` with each element, in order.
    func forEach(_ body: (Element) -> Void) {
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
    private mutating func slot(of identity: UnsafeRawPointer) -> Int? {
        if positions == nil && tail.count - start >= indexedFrom {
            rebuildPositions()
        }
        return lookUp(identity)
    }

    private func lookUp(_ identity: UnsafeRawPointer) -> Int? {
        if let positions {
            return positions[identity]
        }
        return tail[start...].firstIndex { $0?.operationIdentity == identity }
    }

    /// Empties slot `index` (which holds an element).
    private mutating func punch(_ index: Int) {
        if let element = tail[index], positions != nil {
            positions![element.operationIdentity] = nil
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
            tail.removeAll(keepingCapacity: tail.count <= indexedFrom)
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
        var map: [UnsafeRawPointer: Int] = [:]
        map.reserveCapacity(tail.count)
        for (index, element) in tail.enumerated() {
            if let element {
                map[element.operationIdentity] = index
            }
        }
        positions = map
    }
}

/// The elements of an ``SQOperationList`` as a sequence (the first one stored inline).
internal struct SQOperationListElements<Element: SQOperationListElement>: Sequence, IteratorProtocol {
    fileprivate var head: Element?
    fileprivate var tail: [Element?]
    private var index: Int

    fileprivate init(head: Element?, tail: [Element?], start: Int) {
        self.head = head
        self.tail = tail
        index = start
    }

    mutating func next() -> Element? {
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

extension SQDependentReference {
    /// A strong reference to the dependent, or nil if it is going away. Called under the lock
    /// of the dependency whose list holds this reference: a dependent that goes away takes
    /// itself out of that list under the same lock (see `SQOperation.deinit`), so it is either
    /// still in the list and not yet freed, or its deinit has begun and waits for that lock.
    func retainedUnlessDeinitializing() -> SQOperation? {
        cq_swift_try_retain(reference.toOpaque()) ? reference.takeRetainedValue() : nil
    }
}
