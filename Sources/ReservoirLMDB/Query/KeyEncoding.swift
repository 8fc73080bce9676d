import Foundation
import Reservoir

extension KeyEncoding {
    /// Index entries whose key would exceed LMDB's key size live after every value.
    static let overlongTag: UInt8 = 0xFF
}

/// Lexicographic byte comparison, as LMDB orders keys.
@inline(__always)
func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
        let c = memcmp(pa, pb, n)
        if c != 0 { return c < 0 ? -1 : 1 }
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

/// Whether `count` bytes at `a` and at `b` are the same, compared a word at a time inline
/// (a memcmp call costs more than the comparison for a few dozen bytes): whole words, then
/// one more word (or half or quarter word) ending at the last byte, overlapping what was
/// compared, so a short name costs one or two loads a side and no byte loop.
@inline(__always)
func sameBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
    @inline(__always)
    func same<T: FixedWidthInteger>(at offset: Int, _: T.Type) -> Bool {
        a.loadUnaligned(fromByteOffset: offset, as: T.self) == b.loadUnaligned(fromByteOffset: offset, as: T.self)
    }
    switch count {
    case 0:
        return true
    case 1:
        return same(at: 0, UInt8.self)
    case 2, 3:
        return same(at: 0, UInt16.self) && same(at: count &- 2, UInt16.self)
    case 4...7:
        return same(at: 0, UInt32.self) && same(at: count &- 4, UInt32.self)
    default:
        var i = 0
        while i &+ 8 <= count {
            if !same(at: i, UInt64.self) { return false }
            i &+= 8
        }
        return i == count || same(at: count &- 8, UInt64.self)
    }
}

func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in compareBytes(pa, pb) } }
}
