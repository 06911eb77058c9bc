import CQueueCore

/// An immutable byte buffer made of regions: SwiftQueues' `DispatchData`.
///
/// A value wraps one C data object (`cq_data_t`, `cqueuecore/data.h`). Appending and taking a
/// subrange share the existing regions instead of copying bytes: `a.append(b)` builds a new
/// object listing the regions of both, `subdata(in:)` one listing the covered parts. The bytes
/// of a region are released (freed, unmapped, or handed to a custom deallocator) when no value
/// refers to them any more.
///
/// `SQData` is a `RandomAccessCollection` of `UInt8` with `Int` indices from 0: subscripting
/// finds the region by binary search, iteration walks region by region. `Array(data)` and
/// `[UInt8](data)` copy region by region (one `memcpy` each).
///
/// Foundation: SwiftQueues does not import Foundation. `Data(sqData)` works through the
/// collection (`Data.init<S: Sequence>`), and `SQData(data)` through ``init(_:)``, which copies
/// the bytes of any contiguous collection of `UInt8` at once.
///
/// Thread-safety: a value type over immutable storage; every member may be used from any
/// thread, and values may be shared between threads (`Sendable`). A `mutating` member replaces
/// the value's storage and does not affect copies.
///
/// Dispatch: `DispatchData`, with the same members and labels (`Deallocator.custom` takes an
/// ``SQQueue`` and a `@Sendable` closure).
public struct SQData: Sendable {
    @usableFromInline
    internal var storage: SQDataStorage

    @inlinable
    internal init(storage: SQDataStorage) {
        self.storage = storage
    }

    /// Takes over one reference to `handle` (a `cq_data_t`): the value releases it. For code in
    /// this module that gets data objects from the C core (I/O channels). Not public API.
    internal init(adopting handle: OpaquePointer) {
        storage = SQDataStorage(adopting: handle)
    }

    /// The C data object (`cq_data_t`), valid while this value lives. Not public API.
    internal var cHandle: OpaquePointer { storage.handle }

    /// The data of no bytes. Dispatch: `DispatchData.empty`.
    public static let empty = SQData(storage: SQDataStorage.empty)

    /// How `init(bytesNoCopy:deallocator:)` releases the bytes it was given, once no `SQData`
    /// refers to them. Dispatch: `DispatchData.Deallocator`.
    public enum Deallocator {
        /// `free(3)`: the bytes came from `malloc`.
        case free
        /// `munmap(2)`: the bytes came from `mmap`.
        case unmap
        /// Runs the closure once, on the queue (`nil`: the default global queue).
        ///
        /// As in Dispatch, the closure is not `@Sendable`: what it must capture is the pointer
        /// it frees (`.custom(nil) { p.deallocate() }`), which is not `Sendable`, so a
        /// `@Sendable` closure would not compile in the Swift 6 language mode. It runs after
        /// every `SQData` referring to the bytes is gone; it must not touch other state that
        /// another thread uses without synchronizing.
        case custom(SQQueue?, () -> Void)
    }

    /// Copies the bytes into new data (one allocation holding the C object and the bytes).
    /// Dispatch: `DispatchData(bytes:)`.
    public init(bytes buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            self = .empty
            return
        }
        guard let created = cq_data_create_f(base, buffer.count, nil, nil) else {
            fatalError("SQData(bytes:): out of memory for \(buffer.count) bytes")
        }
        self.init(adopting: created)
    }

    /// Copies the bytes into new data. Dispatch: `DispatchData(bytes:)` (deprecated there too).
    @available(swift, deprecated: 4, message: "Use init(bytes: UnsafeRawBufferPointer) instead")
    public init(bytes buffer: UnsafeBufferPointer<UInt8>) {
        self.init(bytes: UnsafeRawBufferPointer(buffer))
    }

    /// Wraps the bytes without copying them; `deallocator` releases them once no `SQData` refers
    /// to them (for empty bytes, at once). The bytes must not change while data refers to them.
    /// Dispatch: `DispatchData(bytesNoCopy:deallocator:)`.
    public init(bytesNoCopy bytes: UnsafeRawBufferPointer, deallocator: Deallocator = .free) {
        let base = bytes.baseAddress
        let created: OpaquePointer?
        switch deallocator {
        case .free:
            created = cq_data_create_f(base, bytes.count, nil, cq__data_destructor_free)
        case .unmap:
            created = cq_data_create_f(base, bytes.count, nil, cq__data_destructor_munmap)
        case .custom(let queue, let block):
            // safety: the closure runs once, after the last reference to the bytes is gone (the
            // C core orders that release before the call): nothing else runs it concurrently.
            nonisolated(unsafe) let block = block
            created = cq_data_create_ctx_f(
                base, bytes.count, queue?.handle, SQWorkBox.retainedContext({ block() }),
                sqRunWorkBox)
        }
        guard let created else {
            fatalError("SQData(bytesNoCopy:): out of memory")
        }
        self.init(adopting: created)
    }

    /// Wraps the bytes without copying them. Dispatch: `DispatchData(bytesNoCopy:deallocator:)`
    /// (deprecated there too).
    @available(swift, deprecated: 4, message: "Use init(bytesNoCopy: UnsafeRawBufferPointer, deallocater: Deallocator) instead")
    public init(bytesNoCopy bytes: UnsafeBufferPointer<UInt8>, deallocator: Deallocator = .free) {
        self.init(bytesNoCopy: UnsafeRawBufferPointer(bytes), deallocator: deallocator)
    }

    /// Copies the bytes of a sequence: at once from contiguous storage (`[UInt8]`, Foundation's
    /// `Data`, `ContiguousArray`, ...), else through an array. Not in Dispatch.
    public init<S: Sequence>(_ elements: S) where S.Element == UInt8 {
        if let data = elements as? SQData {
            self = data
            return
        }
        let copied: SQData? = elements.withContiguousStorageIfAvailable {
            SQData(bytes: UnsafeRawBufferPointer($0))
        }
        if let copied {
            self = copied
        } else {
            self = Array(elements).withUnsafeBytes { SQData(bytes: $0) }
        }
    }

    /// The number of bytes. O(1). Dispatch: `DispatchData.count`.
    @inlinable
    public var count: Int {
        cq_data_get_size(storage.handle)
    }

    /// The data from `range.lowerBound` to `range.upperBound`, sharing the regions (no bytes
    /// copied; one C allocation). As `DispatchData` does, the range is cut to the bytes that
    /// exist: a range that runs past the end gives the bytes up to the end (the last, short
    /// frame of data cut into frames), one that starts at or past the end gives ``empty``. A
    /// negative lower bound stops the process with a message.
    /// Dispatch: `DispatchData.subdata(in:)`.
    public func subdata(in range: Range<Int>) -> SQData {
        sqRequire(
            range.lowerBound >= 0,
            "SQData.subdata(in: \(range)): the range starts before 0")
        if range.isEmpty || range.lowerBound >= count {
            return .empty
        }
        let sub = cq_data_create_subrange(storage.handle, range.lowerBound, range.count)!
        return SQData(adopting: sub)
    }

    /// The contiguous region holding byte `location`, as data, and where it starts in this data
    /// (no bytes copied). A location at or past the end gives ``empty`` and ``count``.
    /// Dispatch: `DispatchData.region(location:)`.
    public func region(location: Int) -> (data: SQData, offset: Int) {
        sqRequire(location >= 0, "SQData.region(location: \(location)): negative location")
        var offset = 0
        let region = cq_data_copy_region(storage.handle, location, &offset)!
        return (SQData(adopting: region), offset)
    }

    /// Appends the bytes of `other`, sharing its regions (no bytes copied).
    /// Dispatch: `DispatchData.append(_:)`.
    public mutating func append(_ other: SQData) {
        let joined = cq_data_create_concat(storage.handle, other.storage.handle)!
        self = SQData(adopting: joined)
    }

    /// Appends a copy of the bytes. Dispatch: `DispatchData.append(_:)`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if bytes.isEmpty {
            return
        }
        append(SQData(bytes: bytes))
    }

    /// Appends a copy of the buffer's bytes (`count * MemoryLayout<SourceType>.stride`).
    /// Dispatch: `DispatchData.append(_:)`.
    public mutating func append<SourceType>(_ buffer: UnsafeBufferPointer<SourceType>) {
        append(UnsafeRawBufferPointer(buffer))
    }

    /// Appends a copy of `count` bytes. Dispatch: `DispatchData.append(_:count:)` (deprecated
    /// there too).
    @available(swift, deprecated: 4, message: "Use append(_: UnsafeRawBufferPointer) instead")
    public mutating func append(_ bytes: UnsafePointer<UInt8>, count: Int) {
        append(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// The owner of one reference to a C data object; its deinit releases it. Immutable.
@usableFromInline
internal final class SQDataStorage: @unchecked Sendable {
    // safety (@unchecked Sendable): `handle` is written once; C data objects are immutable and
    // their calls thread-safe (cqueuecore/data.h).
    @usableFromInline
    internal let handle: OpaquePointer

    internal init(adopting handle: OpaquePointer) {
        self.handle = handle
    }

    internal static let empty = SQDataStorage(adopting: cq_data_get_empty())

    deinit {
        cq_release(UnsafeMutableRawPointer(handle))
    }
}
