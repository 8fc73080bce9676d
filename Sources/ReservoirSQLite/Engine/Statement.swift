import CSQLite
import Foundation
import Reservoir

/// Owns one prepared statement: binds ``Value``s, steps, and reads rows back.
///
/// Statements are cached by their ``Connection`` and reused; callers ``reset()`` them
/// before binding. A statement is used by one thread at a time, like its connection.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    private let database: OpaquePointer
    private let path: String
    /// Column names of the result, read once and refreshed only when SQLite re-prepares
    /// the statement after a schema change (a column added by another connection).
    private var names: [String] = []
    private var namesReprepareCount: Int32 = -1
    /// Where ``bindRow(id:_:skipping:)`` puts the texts and blobs of a row for SQLite to
    /// read in place (`SQLITE_STATIC`). A text bound `SQLITE_TRANSIENT` costs SQLite a
    /// malloc for its copy and a free when the parameter is bound again, about 600
    /// instructions a text: a tenth of a bulk insert's work a record. The bytes stay as they
    /// are until the next `bindRow`, which binds every parameter anew before the statement
    /// can run again. Sized by the rows seen (``lendingWanted``), up to ``lendingLimit``.
    private var lending = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// The text and blob bytes of the largest row bound so far, capped at ``lendingLimit``.
    private var lendingWanted = 0
    /// Rows with more text and blob bytes than this lend what fits and let SQLite copy the rest.
    static let lendingLimit = 64 * 1024

    init(database: OpaquePointer, path: String, sql: String) throws {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else {
            let message = String(cString: sqlite3_errmsg(database))
            sqlite3_finalize(statement)
            throw SQLiteFailure.error(result, path: path, action: "prepare \(Statement.shorten(sql))", nativeMessage: message)
        }
        self.handle = statement
        self.database = database
        self.path = path
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
        lending.deallocate()
    }

    // MARK: - Binding

    /// Resets the statement so it can run again; bindings are replaced by the next binds.
    func reset() {
        // The step that failed has already reported its error; reset repeats it.
        sqlite3_reset(handle)
    }

    /// Binds `value` to the 1-based parameter `index`; SQLite copies a text or blob.
    func bind(_ value: Value, at index: Int32) throws {
        var copying = LendingCursor(isLending: false)
        try bind(value, at: index, cursor: &copying)
    }

    /// How much of ``lending`` the row being bound by ``bindRow(id:_:skipping:)`` has used.
    private struct LendingCursor {
        /// False outside `bindRow`: texts and blobs are copied by SQLite.
        let isLending: Bool
        var used = 0
        /// The row's text and blob bytes so far, lent or not.
        var wanted = 0
    }

    /// Binds a row to a statement whose parameters are the id (1) and then the row's
    /// values in order, the value at `idPosition` left out: every parameter, so none is
    /// left pointing at bytes lent for an earlier row. Texts and blobs are lent from
    /// ``lending`` rather than copied by SQLite.
    func bindRow(id: Value, _ row: Row, skipping idPosition: Int?) throws {
        if lendingWanted > lending.count {
            // Nothing may point into the old buffer once it is freed.
            sqlite3_clear_bindings(handle)
            lending.deallocate()
            lending = .allocate(byteCount: lendingWanted, alignment: 16)
        }
        var cursor = LendingCursor(isLending: true)
        try bind(id, at: 1, cursor: &cursor)
        // Each value is lent to `bind` in place: a loop over the values would copy each one
        // out, retaining and releasing its text or blob.
        try row.values.withUnsafeBufferPointer { values in
            var index: Int32 = 2
            for position in values.indices where position != idPosition {
                try bind(values[position], at: index, cursor: &cursor)
                index += 1
            }
            assert(index - 1 == sqlite3_bind_parameter_count(handle), "bindRow must bind every parameter")
        }
        if cursor.wanted > lendingWanted {
            // Rounded up, so rows that grow a little at a time do not reallocate each time.
            let rounded = 1 << (Int.bitWidth - (cursor.wanted - 1).leadingZeroBitCount)
            lendingWanted = min(Self.lendingLimit, max(256, rounded))
        }
    }

    /// The one switch over a value's kinds, SQLite called directly: a text or blob is lent
    /// when `cursor` is lending and it fits, else copied by SQLite.
    @inline(__always)
    private func bind(_ value: Value, at index: Int32, cursor: inout LendingCursor) throws {
        let result: Int32
        switch value {
        case .null:
            result = sqlite3_bind_null(handle, index)
        case let .integer(integer):
            result = sqlite3_bind_int64(handle, index, integer)
        case let .real(real):
            result = sqlite3_bind_double(handle, index, real)
        case let .text(text):
            // Nil when not lent (a bridged string, empty, or too long).
            if cursor.isLending, let lent = text.utf8.withContiguousStorageIfAvailable({
                lend(UnsafeRawBufferPointer($0), at: index, isText: true, cursor: &cursor)
            }) ?? nil {
                result = lent
            } else {
                result = try bindText(text, at: index)
            }
        case let .blob(data):
            if cursor.isLending, let lent = data.withUnsafeBytes({ lend($0, at: index, isText: false, cursor: &cursor) }) {
                result = lent
            } else {
                result = try bindBlob(data, at: index)
            }
        }
        try check(result, "bind parameter \(index)")
    }

    /// Copies `bytes` into ``lending`` and binds them in place; nil, binding nothing, when
    /// they do not fit or are empty (SQLite copies those).
    @inline(__always)
    private func lend(_ bytes: UnsafeRawBufferPointer, at index: Int32, isText: Bool, cursor: inout LendingCursor) -> Int32? {
        let count = bytes.count
        cursor.wanted += count
        guard count > 0, count <= lending.count - cursor.used, let source = bytes.baseAddress, let base = lending.baseAddress else {
            return nil
        }
        let target = base + cursor.used
        target.copyMemory(from: source, byteCount: count)
        cursor.used += count
        // `count` fits: the buffer is at most `lendingLimit` bytes.
        return isText ? reservoir_sqlite3_bind_text_static(handle, index, target, Int32(count))
            : reservoir_sqlite3_bind_blob_static(handle, index, target, Int32(count))
    }

    func bind(_ integer: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, integer), "bind parameter \(index)")
    }

    /// Binds the UTF-8 bytes of `text` as a blob, for byte-wise matching.
    func bindBytes(of text: String, at index: Int32) throws {
        var text = text
        let result = try text.withUTF8 { buffer -> Int32 in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return reservoir_sqlite3_bind_blob_transient(handle, index, base, try Self.length(buffer.count, path: path))
        }
        try check(result, "bind parameter \(index)")
    }

    private func bindText(_ text: String, at index: Int32) throws -> Int32 {
        // Native strings lend their UTF-8 in place; only a bridged one is copied (withUTF8
        // needs a variable, which costs every string a retain and a release).
        if let result = try text.utf8.withContiguousStorageIfAvailable({ try bindText($0, at: index) }) {
            return result
        }
        var copy = text
        return try copy.withUTF8 { try bindText($0, at: index) }
    }

    private func bindText(_ buffer: UnsafeBufferPointer<UInt8>, at index: Int32) throws -> Int32 {
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return reservoir_sqlite3_bind_text_transient(handle, index, "", 0)
        }
        let count = try Self.length(buffer.count, path: path)
        return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            reservoir_sqlite3_bind_text_transient(handle, index, $0, count)
        }
    }

    private func bindBlob(_ data: Data, at index: Int32) throws -> Int32 {
        try data.withUnsafeBytes { buffer -> Int32 in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return reservoir_sqlite3_bind_blob_transient(handle, index, base, try Self.length(buffer.count, path: path))
        }
    }

    @inline(__always)
    private func check(_ result: Int32, _ action: @autoclosure () -> String) throws {
        guard result != SQLITE_OK else { return }
        throw SQLiteFailure.error(result, path: path, action: "\(action()) of \(Self.shorten(sql))", nativeMessage: String(cString: sqlite3_errmsg(database)))
    }

    private static func length(_ count: Int, path: String) throws -> Int32 {
        guard let length = Int32(exactly: count) else {
            throw ReservoirError(.valueOutOfRange, "\(sqliteStore(path)): a value of \(count) bytes is larger than SQLite's limit of 2 GiB")
        }
        return length
    }

    // MARK: - Stepping

    /// Steps once: true when a row is ready, false when done.
    @inline(__always)
    func step() throws -> Bool {
        let result = sqlite3_step(handle)
        if result == SQLITE_ROW { return true }
        if result == SQLITE_DONE { return false }
        let message = String(cString: sqlite3_errmsg(database))
        sqlite3_reset(handle)
        throw SQLiteFailure.error(result, path: path, action: "run \(Self.shorten(sql))", nativeMessage: message)
    }

    /// Runs the statement to completion, ignoring any rows, and resets it.
    func run() throws {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    // MARK: - Reading

    /// The value of result column `index` (0-based) of the current row, read through the
    /// column's `sqlite3_value`: one column call a value, where `sqlite3_column_type` and then
    /// the typed column call would make two, each taking and leaving the connection's (no-op)
    /// mutex and checking the index. The value is "unprotected" in SQLite's terms, which only
    /// matters to a connection shared by threads at once; a statement here is used by one
    /// thread at a time (its connection is the writer's, under the writer lock, or lent by the
    /// reader pool). Only the accessor of the value's own type is called, so none converts it.
    @inline(__always)
    func value(at index: Int32) -> Value {
        guard let value = sqlite3_column_value(handle, index) else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            return .text(Self.text(of: value))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }

    func int64(at index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    func isNull(at index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// The result's column names, cached across steps and executions.
    var columnNames: [String] {
        let reprepared = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if reprepared != namesReprepareCount || names.count != Int(sqlite3_column_count(handle)) {
            let count = sqlite3_column_count(handle)
            names = (0..<count).map { sqlite3_column_name(handle, $0).map { String(cString: $0) } ?? "" }
            namesReprepareCount = reprepared
        }
        return names
    }

    /// The current row, all result columns, nulls included.
    @inline(__always)
    func row(columns: [String]) -> Row {
        var values: [Value] = []
        values.reserveCapacity(columns.count)
        for index in 0..<Int32(columns.count) {
            values.append(value(at: index))
        }
        return Row(columns: columns, values: values)
    }

    /// Reads the current row into `row`, overwriting its values in place when it already
    /// has `columns` (the previous row of the same statement).
    @inline(__always)
    func read(into row: inout Row, columns: [String]) {
        guard Row.sameColumns(row.columns, columns) else {
            row = self.row(columns: columns)
            return
        }
        row.withUnsafeMutableValues { values in
            for index in values.indices {
                Row.overwrite(values, at: index, with: value(at: Int32(index)))
            }
        }
    }

    static func shorten(_ sql: String) -> String {
        sql.count > 120 ? String(sql.prefix(117)) + "..." : sql
    }
}

/// The current result row's columns, read in place for a ``RowReader``: each typed read calls
/// only the accessor of the column's own type, as ``value(at:)-(Int32)`` does, so nothing is
/// converted.
extension Statement: ColumnSource {
    func value(at index: Int) -> Value {
        value(at: Int32(truncatingIfNeeded: index))
    }

    func integer(at index: Int) -> Int64? {
        column(index, holding: SQLITE_INTEGER).map { sqlite3_value_int64($0) }
    }

    func real(at index: Int) -> Double? {
        column(index, holding: SQLITE_FLOAT).map { sqlite3_value_double($0) }
    }

    func text(at index: Int) -> String? {
        column(index, holding: SQLITE_TEXT).map { Self.text(of: $0) }
    }

    /// Column `index`'s value when SQLite holds it as `type`, else nil.
    @inline(__always)
    private func column(_ index: Int, holding type: Int32) -> OpaquePointer? {
        guard let value = sqlite3_column_value(handle, Int32(truncatingIfNeeded: index)),
              sqlite3_value_type(value) == type else { return nil }
        return value
    }

    /// A text value's bytes as a `String`, byte for byte.
    @inline(__always)
    static func text(of value: OpaquePointer) -> String {
        guard let text = sqlite3_value_text(value) else { return "" }
        let count = Int(sqlite3_value_bytes(value))
        guard count > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}
