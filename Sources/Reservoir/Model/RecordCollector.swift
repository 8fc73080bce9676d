/// Where a fetch puts its records (``RecordCoding/records(_:fetch:scan:)``) until it returns
/// them as an array of exactly their number, allocated once.
///
/// A backend that announces the count before the first record (`expecting`) gets an array of
/// that capacity at once. One that cannot (SQLite's statement steps without counting) had its
/// array grown from 16 records by doubling: a read of 100 records allocated, copied and freed
/// the array three times on the way, and about a fifth of the last one's capacity stayed unused
/// (Benchmarks/NOTES.md, "Collecting a fetch's records"). Here its records are put in a block
/// the calling thread keeps for its fetches (``RecordScratch``), then moved into their array at
/// the end: a `memcpy`, the records neither retained nor released. More records than the block
/// holds move into a growing array and go on there.
///
/// One fetch at a time uses a thread's block: a fetch inside a record's decoding finds none
/// and makes its own, kept afterwards only if the slot is empty.
@usableFromInline
struct RecordCollector<T> {
    /// The records once they are in an array: announced, or more than the block holds.
    @usableFromInline var array: [T] = []
    /// The block while the records are in it, else nil.
    @usableFromInline var scratch: RecordScratch?
    /// `scratch`'s memory bound to `T`, and how many of it are initialized.
    @usableFromInline var base: UnsafeMutablePointer<T>?
    @usableFromInline var count = 0
    @usableFromInline var capacity = 0

    @inlinable
    init() {
        // A type that needs more alignment than the block has, or one too large to put
        // several in it, goes straight to the array.
        guard MemoryLayout<T>.alignment <= RecordScratch.alignment,
              RecordScratch.byteCount / MemoryLayout<T>.stride >= 4,
              let scratch = RecordScratch.take() else {
            array.reserveCapacity(16)  // not grown from 1, 2, 4 and 8 records
            return
        }
        capacity = RecordScratch.byteCount / MemoryLayout<T>.stride
        self.scratch = scratch
        base = scratch.memory.bindMemory(to: T.self, capacity: capacity)
    }

    /// The backend announces `expected` records before the first: they go into an array of
    /// that capacity, and the block is given back at once.
    @inlinable
    mutating func expect(_ expected: Int) {
        if base != nil, count == 0 { giveBack() }
        if base == nil { array.reserveCapacity(expected) }
    }

    @inlinable @inline(__always)
    mutating func append(_ record: __owned T) {
        if let base {
            if count < capacity {
                (base + count).initialize(to: record)
                count &+= 1
                return
            }
            moveToArray(from: base)
        }
        array.append(record)
    }

    /// Moves the block's records, which filled it, into the array, and gives the block back.
    @inlinable @inline(never)
    mutating func moveToArray(from base: UnsafeMutablePointer<T>) {
        let moving = count
        // Room for the next power of two, as an array grown by doubling from 16 has.
        let room = 1 << (Int.bitWidth - moving.leadingZeroBitCount)
        array = Self.moving(moving, from: base, room: room)
        count = 0
        giveBack()
    }

    /// The records, in the order appended; the collector is empty after.
    @inlinable
    mutating func finish() -> [T] {
        guard let base else { return array }
        let moving = count
        count = 0
        defer { giveBack() }
        guard moving > 0 else { return [] }
        return Self.moving(moving, from: base, room: moving)
    }

    /// An array of room for `room` records that `count` records are moved into from `base`:
    /// their bytes copied, none retained or released.
    @inlinable
    static func moving(_ count: Int, from base: UnsafeMutablePointer<T>, room: Int) -> [T] {
        Array(unsafeUninitializedCapacity: room) { buffer, initialized in
            // `room` is at least `count`, which is above 0: the buffer has an address.
            buffer.baseAddress?.moveInitialize(from: base, count: count)
            initialized = buffer.baseAddress == nil ? 0 : count
        }
    }

    /// Releases what the block still holds (a fetch that threw) and gives the block back.
    @inlinable
    mutating func discard() {
        guard let base else { return }
        base.deinitialize(count: count)
        count = 0
        giveBack()
    }

    @inlinable
    mutating func giveBack() {
        base = nil
        if let scratch { RecordScratch.giveBack(scratch) }
        scratch = nil
    }
}

/// A thread's block for a fetch's records (``RecordCollector``), kept in the thread's slot
/// (``ThreadSpare``) between fetches and freed when the thread exits.
@usableFromInline
final class RecordScratch {
    /// 16 KB: 341 records of the benchmark table's five fields (48 bytes).
    @usableFromInline static let byteCount = 16 * 1024
    @usableFromInline static let alignment = 16

    @usableFromInline let memory: UnsafeMutableRawPointer

    private init() {
        memory = UnsafeMutableRawPointer.allocate(byteCount: Self.byteCount, alignment: Self.alignment)
    }

    deinit { memory.deallocate() }

    /// The calling thread's block, or a new one when a fetch on this thread holds it; nil
    /// where the platform keeps no thread slot.
    @usableFromInline
    static func take() -> RecordScratch? {
        guard let slot = spareScratch.slot() else { return nil }
        return slot.take() ?? RecordScratch()
    }

    /// Keeps `scratch` for the thread's next fetch, unless one was given back meanwhile.
    @usableFromInline
    static func giveBack(_ scratch: RecordScratch) {
        spareScratch.slot()?.giveBack(scratch)
    }
}

/// Each thread's spare ``RecordScratch``.
private let spareScratch = ThreadSpare<RecordScratch>()
