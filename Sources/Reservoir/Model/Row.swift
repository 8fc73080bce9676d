/// A record as stored: named columns, each holding a ``Value``.
///
/// Rows are backend-neutral, so tools can copy and inspect stores without the
/// app's Swift types. Column order is the order the record's `CodingKeys` encode in.
/// Two rows are equal when they hold the same columns with identical values
/// (``Value/isIdentical(to:)``), whatever the column order.
public struct Row: Sendable {
    /// The column names, in order.
    public private(set) var columns: [String]
    /// The values, in column order.
    @inlinable public var values: [Value] { storedValues }
    @usableFromInline var storedValues: [Value]

    /// An empty row.
    public init() {
        columns = []
        storedValues = []
    }

    /// A row from parallel arrays of column names and values.
    /// - Precondition: the arrays have the same count and names are unique.
    public init(columns: [String], values: [Value]) {
        precondition(columns.count == values.count, "Row: \(columns.count) columns but \(values.count) values")
        self.columns = columns
        self.storedValues = values
    }

    /// A row from `(column, value)` pairs; a repeated column keeps its last value.
    public init<S: Sequence>(_ pairs: S) where S.Element == (String, Value) {
        self.init()
        for (column, value) in pairs { self[column] = value }
    }

    /// Runs `body` with the values in place, keeping the columns: lets a backend refill one
    /// row for each stored row it reads (``ReadTransaction/fetch(_:each:)``) instead of
    /// allocating a row each time. Copies made before share nothing with the result.
    @inlinable
    public mutating func withUnsafeMutableValues<R>(_ body: (UnsafeMutableBufferPointer<Value>) throws -> R) rethrows -> R {
        try storedValues.withUnsafeMutableBufferPointer { try body($0) }
    }

    /// Writes `value` over `values[index]` (the buffer ``withUnsafeMutableValues(_:)`` lends):
    /// a null or a number holds no reference and is written over as it is; only a text or a
    /// blob is released first. An assignment calls an outlined destroy for every column of
    /// every row a backend refills, whatever its kind.
    @inlinable
    public static func overwrite(_ values: UnsafeMutableBufferPointer<Value>, at index: Int, with value: consuming Value) {
        switch values[index] {
        case .null, .integer, .real:
            // A buffer holding `index` has a base address.
            (values.baseAddress.unsafelyUnwrapped + index).initialize(to: value)
        case .text, .blob:
            values[index] = value
        }
    }

    /// Whether the column names `columns` (a lent row's) are `expected`: the very same array,
    /// told by its storage without comparing names (a backend refilling a row hands it its
    /// layout's own array), or equal names in order.
    @inlinable
    public static func sameColumns(_ columns: [String], _ expected: [String]) -> Bool {
        guard columns.count == expected.count else { return false }
        let shared = columns.withUnsafeBufferPointer { a in expected.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
        return shared || columns == expected
    }

    /// The number of columns.
    @inlinable public var count: Int { columns.count }

    /// The position of `column`, if the row has it.
    @inlinable
    public func index(of column: String) -> Int? {
        Self.position(of: column, in: columns)
    }

    /// The position of `name` in `names`: first by exact representation, then by comparison.
    /// Also how the memory backend finds a table by its entity's name.
    @inlinable
    static func position(of name: String, in names: [String]) -> Int? {
        names.withUnsafeBufferPointer { names in
            if let position = identicalIndex(of: name, in: names) { return position }
            // Comparing lengths first skips most of the string comparisons that would fail.
            let length = name.utf8.count
            return names.firstIndex { $0.utf8.count == length && $0 == name }
        }
    }

    /// The position of the first of `columns` with exactly `column`'s representation, which
    /// makes it equal (the standard library's own first test in `==`). A short name decoded
    /// from storage and the string literal naming it in code usually match so, which spares
    /// the full comparisons `index(of:)` would otherwise make with every column before it.
    @inlinable @inline(__always)
    static func identicalIndex(of column: String, in columns: UnsafeBufferPointer<String>) -> Int? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        return columns.indices.first { isIdentical(column, at: $0, in: columns) }
    }

    /// Whether `columns[position]` has exactly `column`'s representation (see
    /// ``identicalIndex(of:in:)``); false where a `String` is not two words.
    @inlinable @inline(__always)
    static func isIdentical(_ column: String, at position: Int, in columns: UnsafeBufferPointer<String>) -> Bool {
        guard MemoryLayout<String>.size == 16, let base = columns.baseAddress else { return false }
        let bits = unsafeBitCast(column, to: (UInt64, UInt64).self)
        let offset = position &* 16
        let raw = UnsafeRawPointer(base)
        return raw.load(fromByteOffset: offset, as: UInt64.self) == bits.0
            && raw.load(fromByteOffset: offset &+ 8, as: UInt64.self) == bits.1
    }

    /// The value of `column`, or `nil` when the row has no such column
    /// (which readers treat as null). Setting `nil` removes the column.
    public subscript(column: String) -> Value? {
        get {
            guard let i = index(of: column) else { return nil }
            return values[i]
        }
        set {
            if let i = index(of: column) {
                if let newValue {
                    storedValues[i] = newValue
                } else {
                    columns.remove(at: i)
                    storedValues.remove(at: i)
                }
            } else if let newValue {
                columns.append(column)
                storedValues.append(newValue)
            }
        }
    }

    /// The value of `column`, with a missing column read as null.
    @inlinable
    public func value(_ column: String) -> Value {
        guard let position = index(of: column) else { return .null }
        return storedValues[position]
    }

    /// The value of `column`, looked for first at `position`: rows of one type usually keep
    /// their columns where `makeRow()` put them, so a mapping that knows its own order can
    /// skip the search. Any other position still finds the column.
    @inlinable @inline(__always)
    public func value(_ column: String, at position: Int?) -> Value {
        if let position, position >= 0, position < columns.count, columns[position] == column {
            return storedValues[position]
        }
        return value(column)
    }

    /// The value of `column` read as `T`, for ``Storable/init(row:)`` written by hand. A
    /// missing column reads as null, so an optional field added later reads as nil. Throws
    /// `.typeMismatch` naming the column when the stored value cannot be a `T`. `position`,
    /// where the column usually is, is only a hint (see ``value(_:at:)``).
    @inlinable
    public func decode<T: ValueConvertible>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try converted(column, at: position)
    }

    /// The value of `column` read as any `Decodable` type, as ``RowDecoder`` reads a field:
    /// a type with a single-value encoding reads that value, anything else (structs, arrays,
    /// dictionaries) its JSON text. `@RowMapped` records read fields of such types with this.
    public func decode<T: Decodable>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try RowDecoder.decodeNested(T.self, from: value(column, at: position), column: column)
    }

    /// The value of `column` read as `T`: the same as the ``ValueConvertible`` overload, which
    /// this one exists to choose when `T` is also `Decodable`.
    @inlinable @inline(__always)
    public func decode<T: ValueConvertible & Decodable>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try converted(column, at: position)
    }

    /// The body of both `ValueConvertible` overloads, inlined into the one the caller reaches.
    /// The value is lent to `fromValue` from the row's storage, not copied out of it: a copy
    /// would retain and release a text or blob value for every field of every record read.
    @inlinable @inline(__always)
    func converted<T: ValueConvertible>(_ column: String, at position: Int?) throws -> T {
        do {
            return try storedValues.withUnsafeBufferPointer { values in
                if let position, position >= 0, position < values.count,
                   columns.withUnsafeBufferPointer({ Self.isColumn(column, at: position, in: $0) }) {
                    return try T.fromValue(values[position])
                }
                guard let found = index(of: column) else { return try T.fromValue(.null) }
                return try T.fromValue(values[found])
            }
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        }
    }

    /// Whether `columns[position]` is `column`, tried first by representation, then by comparison.
    @inlinable @inline(__always)
    static func isColumn(_ column: String, at position: Int, in columns: UnsafeBufferPointer<String>) -> Bool {
        isIdentical(column, at: position, in: columns) || columns[position] == column
    }
}

extension Row: Equatable {
    /// Whether both rows hold the same columns with identical values, in any column order.
    public static func == (lhs: Row, rhs: Row) -> Bool {
        let count = lhs.columns.count
        guard count == rhs.columns.count else { return false }
        // Rows of one record type share their column order: compare position by position.
        let sameOrder = lhs.columns.withUnsafeBufferPointer { left in
            rhs.columns.withUnsafeBufferPointer { right in
                (0..<count).allSatisfy { left[$0] == right[$0] }
            }
        }
        if sameOrder {
            return lhs.storedValues.withUnsafeBufferPointer { left in
                rhs.storedValues.withUnsafeBufferPointer { right in
                    (0..<count).allSatisfy { left[$0].isIdentical(to: right[$0]) }
                }
            }
        }
        for (column, value) in zip(lhs.columns, lhs.values) {
            guard let other = rhs[column], value.isIdentical(to: other) else { return false }
        }
        return true
    }
}

extension Row: Sequence {
    /// The row's columns with their values, in column order.
    public func makeIterator() -> some IteratorProtocol<(column: String, value: Value)> {
        zip(columns, values).lazy.map { (column: $0, value: $1) }.makeIterator()
    }
}

extension Row: CustomStringConvertible {
    /// The row as `column: value` pairs.
    public var description: String {
        "[" + zip(columns, values).map { "\($0): \($1)" }.joined(separator: ", ") + "]"
    }
}
