import Foundation

/// One stored row lent to ``Storable/init(reader:)`` while a fetch reads it, read one column
/// at a time where the backend holds it (a ``ColumnSource``, such as a SQLite statement's
/// current row): a record built with `@Storable` or `@RowMapped` takes each field straight
/// from the engine, with no ``Row`` and, for an integer, a real or a text that the field's type
/// reads as it is, no ``Value`` made for it. ``decode(_:as:at:)`` returns what
/// ``Row/decode(_:as:at:)`` returns for the same row, and throws the same errors.
///
/// A reader cannot be copied, and it is lent only for the call it is passed to: the row under
/// it changes when the fetch moves on. Keep ``row()`` to keep the row.
public struct RowReader: ~Copyable {
    /// Where the columns are read.
    @usableFromInline let source: any ColumnSource
    /// The column names, in the order `source` numbers them.
    public let columns: [String]

    /// A reader of `source`'s current row, whose columns are `columns` in the order
    /// `source` numbers them. A backend makes one per fetch and lends it for each row.
    public init(columns: [String], source: any ColumnSource) {
        self.source = source
        self.columns = columns
    }

    /// The current row as a ``Row``, to keep beyond the call the reader was lent to.
    public func row() -> Row {
        Row(columns: columns, values: columns.indices.map { source.value(at: $0) })
    }

    /// The value of `column`, with a missing column read as null; `position`, where the
    /// column usually is, is only a hint (see ``Row/value(_:at:)``).
    @inlinable
    public func value(_ column: String, at position: Int? = nil) -> Value {
        guard let index = index(of: column, at: position) else { return .null }
        return source.value(at: index)
    }

    /// The value of `column` read as `T`: what ``Row/decode(_:as:at:)`` returns for the row.
    @inlinable
    public func decode<T: ValueConvertible>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try converted(column, at: position)
    }

    /// The value of `column` read as any `Decodable` type, as ``Row/decode(_:as:at:)`` reads it.
    public func decode<T: Decodable>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try RowDecoder.decodeNested(T.self, from: value(column, at: position), column: column)
    }

    /// The ``ValueConvertible`` overload, chosen when `T` is also `Decodable`.
    @inlinable @inline(__always)
    public func decode<T: ValueConvertible & Decodable>(_ column: String, as type: T.Type = T.self, at position: Int? = nil) throws -> T {
        try converted(column, at: position)
    }

    /// The position of `column`, tried first at `position`.
    @inlinable @inline(__always)
    func index(of column: String, at position: Int?) -> Int? {
        if let position, position >= 0, position < columns.count,
           columns.withUnsafeBufferPointer({ Row.isColumn(column, at: position, in: $0) }) {
            return position
        }
        return Row.position(of: column, in: columns)
    }

    /// The body of both `ValueConvertible` overloads. An integer read as `Int` or `Int64`, a
    /// real read as `Double` and a text read as `String` (or as their optionals) are taken as
    /// they are stored; anything else, and any of them stored as another kind, becomes a
    /// ``Value`` for `T.fromValue`, exactly as from a row.
    @inlinable @inline(__always)
    func converted<T: ValueConvertible>(_ column: String, at position: Int?) throws -> T {
        guard let index = index(of: column, at: position) else { return try Self.converted(.null, column) }
        if Self.reads(Int.self, as: T.self), let stored = source.integer(at: index), let int = Int(exactly: stored) {
            return Self.cast(int, to: T.self)
        }
        if Self.reads(Int64.self, as: T.self), let stored = source.integer(at: index) {
            return Self.cast(stored, to: T.self)
        }
        if Self.reads(Double.self, as: T.self), let stored = source.real(at: index) {
            return Self.cast(stored, to: T.self)
        }
        if Self.reads(String.self, as: T.self), let stored = source.text(at: index) {
            return Self.cast(stored, to: T.self)
        }
        return try Self.converted(source.value(at: index), column)
    }

    /// Whether `T` is `Stored` or `Stored?`: a type a stored value of that kind is read as
    /// unchanged. Decided when `T` is specialized.
    @inlinable @inline(__always)
    static func reads<Stored, T>(_ stored: Stored.Type, as type: T.Type) -> Bool {
        T.self == Stored.self || T.self == Stored?.self
    }

    /// `value` as `T`, which ``reads(_:as:)`` found is `Stored` or `Stored?`.
    @inlinable @inline(__always)
    static func cast<Stored, T>(_ value: Stored, to type: T.Type) -> T {
        T.self == Stored.self ? unsafeBitCast(value, to: T.self) : unsafeBitCast(Optional(value), to: T.self)
    }

    /// `value` read as `T` by its own mapping, an error naming `column`.
    @inlinable
    static func converted<T: ValueConvertible>(_ value: Value, _ column: String) throws -> T {
        do {
            return try T.fromValue(value)
        } catch let error as ReservoirError {
            throw error.inColumn(column)
        }
    }
}

/// The columns of a backend's current result row, read in place for a ``RowReader``
/// (see ``ReadTransaction/scan(_:expecting:rows:readers:)``). Columns are numbered from 0 in the
/// order of the names the reader was made with.
///
/// Only ``value(at:)`` is required. The typed reads let a record's field skip the ``Value``:
/// each returns the column's stored value when it is of that kind, exactly what `value(at:)`
/// would hold in the matching case (`.integer`, `.real`, `.text`), and nil for any other
/// kind, including null; the reader then falls back to `value(at:)`. Their defaults read
/// `value(at:)`.
public protocol ColumnSource: AnyObject {
    /// The value of column `index` of the current row.
    func value(at index: Int) -> Value
    /// Column `index`'s integer, or nil when it holds another kind.
    func integer(at index: Int) -> Int64?
    /// Column `index`'s real, or nil when it holds another kind.
    func real(at index: Int) -> Double?
    /// Column `index`'s text, or nil when it holds another kind.
    func text(at index: Int) -> String?
}

extension ColumnSource {
    public func integer(at index: Int) -> Int64? {
        if case let .integer(value) = value(at: index) { return value }
        return nil
    }

    public func real(at index: Int) -> Double? {
        if case let .real(value) = value(at: index) { return value }
        return nil
    }

    public func text(at index: Int) -> String? {
        if case let .text(value) = value(at: index) { return value }
        return nil
    }
}
