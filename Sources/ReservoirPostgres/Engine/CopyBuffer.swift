/// The bytes of a binary `COPY … FROM STDIN` being built, in memory this buffer owns. Each
/// append makes room once and stores its value whole; a `[UInt8]` checked its capacity and
/// uniqueness for every byte appended, about 200 instructions a value in a bulk load (a
/// third of the client's work a row; Benchmarks/NOTES.md, "PostgreSQL bulk insert: the COPY
/// buffer").
final class CopyBuffer {
    /// Nil until the first append: most connections never stream a `COPY`.
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0
    /// The room the first append makes, at least.
    private let firstCapacity: Int
    /// The bytes written so far.
    private(set) var count = 0

    /// A buffer whose first append makes room for `capacity` bytes (a connection sends at
    /// 64 KB), and which grows by doubling after that.
    init(capacity: Int = (1 << 16) + 4096) {
        firstCapacity = max(capacity, 64)
    }

    deinit { base?.deallocate() }

    /// Where the next `extra` bytes go, after making room for them.
    @inline(__always)
    private func room(_ extra: Int) -> UnsafeMutableRawPointer {
        if let base, extra <= capacity &- count { return base + count }
        return grow(to: count + extra) + count
    }

    /// Moves the bytes to a larger allocation (the first one on the first append); its start.
    @inline(never)
    private func grow(to needed: Int) -> UnsafeMutableRawPointer {
        let newCapacity = max(needed, capacity * 2, firstCapacity)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let base {
            grown.copyMemory(from: base, byteCount: count)
            base.deallocate()
        }
        base = grown
        capacity = newCapacity
        return grown
    }

    /// `value`, most significant byte first (PostgreSQL's binary format).
    @inline(__always)
    func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        room(MemoryLayout<T>.size).storeBytes(of: value.bigEndian, as: T.self)
        count &+= MemoryLayout<T>.size
    }

    /// One field of a `COPY` row: its length as a 32-bit integer, then `value`'s bytes.
    @inline(__always)
    func appendField<T: FixedWidthInteger>(_ value: T) {
        let out = room(4 + MemoryLayout<T>.size)
        out.storeBytes(of: Int32(MemoryLayout<T>.size).bigEndian, as: Int32.self)
        out.storeBytes(of: value.bigEndian, toByteOffset: 4, as: T.self)
        count &+= 4 + MemoryLayout<T>.size
    }

    /// One field of a `COPY` row: its length as a 32-bit integer, then `bytes`.
    func appendField(_ bytes: UnsafeRawBufferPointer) {
        let out = room(4 + bytes.count)
        out.storeBytes(of: Int32(truncatingIfNeeded: bytes.count).bigEndian, as: Int32.self)
        if let source = bytes.baseAddress, !bytes.isEmpty {
            (out + 4).copyMemory(from: source, byteCount: bytes.count)
        }
        count &+= 4 + bytes.count
    }

    /// `bytes` as they are.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        room(bytes.count).copyMemory(from: source, byteCount: bytes.count)
        count &+= bytes.count
    }

    /// Drops the bytes from `offset` on (a row taken back).
    func truncate(to offset: Int) {
        count = min(max(offset, 0), count)
    }

    func removeAll() { count = 0 }

    /// The bytes written so far, for `body` only.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
    }
}
