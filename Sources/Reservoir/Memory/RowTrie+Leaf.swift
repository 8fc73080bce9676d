import Foundation

extension RowTrie {
    /// What a leaf keeps besides its bytes: the slots in use, the byte area's size and use, and
    /// the slots' column names (rows of one type share one array, so `columns` is usually every
    /// slot's and `otherColumns` is empty).
    struct LeafHeader {
        var present: UInt64 = 0
        /// The bytes after the offset table.
        var capacity: Int
        /// The bytes after the offset table written so far (live or not).
        var used = 0
        /// The bytes of `used` no slot refers to any more.
        var garbage = 0
        var columns: [String] = []
        var otherColumns: [Int: [String]] = [:]
    }

    /// The rows of `fanout` consecutive ids in one allocation, as an LMDB page holds its rows:
    /// the header, a table of each slot's (offset, length), then the slots' values encoded one
    /// after another (a tag byte, then 8 bytes for an integer or a real's bit pattern, or a
    /// 4-byte length and the bytes of a text's UTF-8 or a blob). A point read touches this one
    /// region and builds its row from it; no row or text has a heap object of its own here.
    /// A slot rewritten at its old length is rewritten in place, else appended; a leaf out of
    /// room, or shared (a copy was taken), is copied compactly first, so shared leaves never change.
    final class Leaf: ManagedBuffer<LeafHeader, UInt8> {
        /// Bytes of the offset table: an offset and a length, 4 bytes each, a slot.
        static let tableSize = RowTrie.fanout * 8

        static func make(capacity: Int) -> Leaf {
            let leaf = unsafeDowncast(create(minimumCapacity: tableSize + capacity) { _ in LeafHeader(capacity: capacity) }, to: Leaf.self)
            leaf.withUnsafeMutablePointerToElements { $0.initialize(repeating: 0, count: tableSize) }
            return leaf
        }

        var present: UInt64 { withUnsafeMutablePointerToHeader { $0.pointee.present } }

        // MARK: - Reading

        /// The row in `slot`, decoded from its bytes.
        @inline(__always)
        func row(at slot: Int) -> Row? {
            var row = Row()
            return fill(&row, from: slot) ? row : nil
        }

        /// Decodes `slot`'s row into `row`, refilling its values in place when it already has the
        /// slot's columns (a lent row, one per point read, allocates nothing but its texts);
        /// false when the slot is empty.
        @inline(__always)
        func fill(_ row: inout Row, from slot: Int) -> Bool {
            withUnsafeMutablePointers { header, bytes in
                guard header.pointee.present & (1 &<< UInt64(slot)) != 0 else { return false }
                let offset = Int(UnsafeRawPointer(bytes).load(fromByteOffset: slot &* 8, as: UInt32.self))
                let start = UnsafeRawPointer(bytes + Self.tableSize + offset)
                let sameColumns = header.pointee.otherColumns.isEmpty || header.pointee.otherColumns[slot] == nil
                if sameColumns, Row.sameColumns(row.columns, header.pointee.columns) {
                    row.withUnsafeMutableValues { Self.decode(start, into: $0) }
                } else {
                    let names = sameColumns ? header.pointee.columns : header.pointee.otherColumns[slot] ?? []
                    row = Row(columns: names, values: Self.decode(start, count: names.count))
                }
                return true
            }
        }

        /// Decodes `values.count` values from `start` into `values`.
        @inline(__always)
        private static func decode(_ start: UnsafeRawPointer, into values: UnsafeMutableBufferPointer<Value>) {
            var position = start
            for index in values.indices { Row.overwrite(values, at: index, with: decodeValue(&position)) }
        }

        /// Decodes `count` values from `start` into a new array. Grown from empty with
        /// `reserveCapacity`, which is specialized here: `Array(repeating:count:)` and
        /// `Array(unsafeUninitializedCapacity:)` allocate through the standard library's
        /// unspecialized entry point, which looks up the array's type metadata each time.
        @inline(__always)
        private static func decode(_ start: UnsafeRawPointer, count: Int) -> [Value] {
            var values: [Value] = []
            values.reserveCapacity(count)
            var position = start
            for _ in 0..<count { values.append(decodeValue(&position)) }
            return values
        }

        /// The value encoded at `position`, which moves past it.
        @inline(__always)
        private static func decodeValue(_ position: inout UnsafeRawPointer) -> Value {
            let tag = position.load(as: UInt8.self)
            position += 1
            switch tag {
            case 1:
                defer { position += 8 }
                return .integer(position.loadUnaligned(as: Int64.self))
            case 2:
                defer { position += 8 }
                return .real(Double(bitPattern: position.loadUnaligned(as: UInt64.self)))
            case 3, 4:
                let length = Int(position.loadUnaligned(as: UInt32.self))
                let payload = UnsafeRawBufferPointer(start: position + 4, count: length)
                position += 4 + length
                return tag == 3 ? .text(String(decoding: payload, as: UTF8.self)) : .blob(Data(payload))
            default:
                return .null
            }
        }

        // MARK: - Writing

        private static func encodedSize(_ values: UnsafeBufferPointer<Value>) -> Int {
            var size = 0
            for value in values {
                switch value {
                case .null: size += 1
                case .integer, .real: size += 9
                case let .text(text): size += 5 + text.utf8.count
                case let .blob(data): size += 5 + data.count
                }
            }
            return size
        }

        private static func encode(_ values: UnsafeBufferPointer<Value>, into start: UnsafeMutableRawPointer) {
            var position = start
            func bytes(_ tag: UInt8, _ payload: UnsafeRawBufferPointer) {
                position.storeBytes(of: tag, as: UInt8.self)
                position.storeBytes(of: UInt32(payload.count), toByteOffset: 1, as: UInt32.self)
                if let source = payload.baseAddress { (position + 5).copyMemory(from: source, byteCount: payload.count) }
                position += 5 + payload.count
            }
            for value in values {
                switch value {
                case .null:
                    position.storeBytes(of: 0, as: UInt8.self)
                    position += 1
                case let .integer(integer):
                    position.storeBytes(of: 1, as: UInt8.self)
                    position.storeBytes(of: integer, toByteOffset: 1, as: Int64.self)
                    position += 9
                case let .real(real):
                    position.storeBytes(of: 2, as: UInt8.self)
                    position.storeBytes(of: real.bitPattern, toByteOffset: 1, as: UInt64.self)
                    position += 9
                case var .text(text):
                    text.withUTF8 { bytes(3, UnsafeRawBufferPointer($0)) }
                case let .blob(data):
                    data.withUnsafeBytes { bytes(4, $0) }
                }
            }
        }

        /// The (offset, length) of `slot`'s bytes.
        private func extent(_ slot: Int) -> (offset: Int, length: Int) {
            withUnsafeMutablePointerToElements { bytes in
                let table = UnsafeRawPointer(bytes)
                return (Int(table.load(fromByteOffset: slot &* 8, as: UInt32.self)),
                        Int(table.load(fromByteOffset: slot &* 8 &+ 4, as: UInt32.self)))
            }
        }

        /// A copy with only the live bytes, packed, and room for `extra` more.
        private func compacted(extra: Int) -> Leaf {
            let live = withUnsafeMutablePointerToHeader { $0.pointee.used - $0.pointee.garbage }
            let copy = Leaf.make(capacity: max(256, live + extra + (live + extra) / 4))
            withUnsafeMutablePointers { header, bytes in
                copy.withUnsafeMutablePointers { target, targetBytes in
                    target.pointee.present = header.pointee.present
                    target.pointee.columns = header.pointee.columns
                    target.pointee.otherColumns = header.pointee.otherColumns
                    var used = 0
                    var present = header.pointee.present
                    while present != 0 {
                        let slot = present.trailingZeroBitCount
                        present &= present &- 1
                        let (offset, length) = extent(slot)
                        (targetBytes + Self.tableSize + used).initialize(from: bytes + Self.tableSize + offset, count: length)
                        let table = UnsafeMutableRawPointer(targetBytes)
                        table.storeBytes(of: UInt32(used), toByteOffset: slot &* 8, as: UInt32.self)
                        table.storeBytes(of: UInt32(length), toByteOffset: slot &* 8 &+ 4, as: UInt32.self)
                        used += length
                    }
                    target.pointee.used = used
                }
            }
            return copy
        }

        /// Puts `row` in `slot` of the leaf `node` (made when nil, copied first when shared or out
        /// of room); returns the row it replaced.
        static func put(_ row: Row, at slot: Int, in node: inout AnyObject?) -> Row? {
            let size = row.values.withUnsafeBufferPointer { encodedSize($0) }
            if node == nil {
                node = make(capacity: max(256, size))
            } else if !isKnownUniquelyReferenced(&node) {
                node = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self).compacted(extra: size)
            }
            var leaf = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
            let old = leaf.row(at: slot)
            var (offset, length) = old == nil ? (0, 0) : leaf.extent(slot)
            if size != length {
                let (used, capacity) = leaf.withUnsafeMutablePointerToHeader { ($0.pointee.used, $0.pointee.capacity) }
                if used + size > capacity {
                    leaf = leaf.compacted(extra: size)
                    node = leaf
                }
                leaf.withUnsafeMutablePointerToHeader { header in
                    header.pointee.garbage += length
                    offset = header.pointee.used
                    header.pointee.used += size
                }
                length = size
            }
            leaf.withUnsafeMutablePointers { header, bytes in
                row.values.withUnsafeBufferPointer { encode($0, into: UnsafeMutableRawPointer(bytes + tableSize + offset)) }
                let table = UnsafeMutableRawPointer(bytes)
                table.storeBytes(of: UInt32(offset), toByteOffset: slot &* 8, as: UInt32.self)
                table.storeBytes(of: UInt32(length), toByteOffset: slot &* 8 &+ 4, as: UInt32.self)
                let bit: UInt64 = 1 &<< UInt64(slot)
                if header.pointee.present & ~bit == 0 {
                    // Alone in the leaf: its columns become the leaf's.
                    header.pointee.columns = row.columns
                    header.pointee.otherColumns = [:]
                } else if row.columns == header.pointee.columns {
                    if !header.pointee.otherColumns.isEmpty { header.pointee.otherColumns[slot] = nil }
                } else {
                    header.pointee.otherColumns[slot] = row.columns
                    if (header.pointee.present | bit).nonzeroBitCount == header.pointee.otherColumns.count {
                        // No slot uses `columns` any more (a migration re-put every row): the new
                        // columns become the leaf's, so reads skip the look-up again.
                        header.pointee.columns = row.columns
                        header.pointee.otherColumns = header.pointee.otherColumns.filter { $0.value != row.columns }
                    }
                }
                header.pointee.present |= bit
            }
            return old
        }

        /// Empties `slot` of the leaf `node` (copied first when shared; nil when left empty);
        /// returns the row it held.
        static func remove(at slot: Int, in node: inout AnyObject?) -> Row? {
            // No local reference to the leaf, which would make it look shared.
            guard node != nil, let old = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self).row(at: slot) else { return nil }
            if !isKnownUniquelyReferenced(&node) {
                node = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self).compacted(extra: 0)
            }
            let leaf = unsafeDowncast(node.unsafelyUnwrapped, to: Leaf.self)
            let length = leaf.extent(slot).length
            let empty = leaf.withUnsafeMutablePointerToHeader { header in
                header.pointee.present &= ~(1 &<< UInt64(slot))
                header.pointee.garbage += length
                if !header.pointee.otherColumns.isEmpty { header.pointee.otherColumns[slot] = nil }
                return header.pointee.present == 0
            }
            if empty { node = nil }
            return old
        }
    }
}
