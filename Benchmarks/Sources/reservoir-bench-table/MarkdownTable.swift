import Foundation

/// The table's columns, in order: each Reservoir backend beside its own engine's raw C side,
/// then GRDB.
enum TableColumn: CaseIterable {
    case memory, sqlite, rawSQLite, lmdb, rawLMDB, postgres, rawLibpq, grdb

    var title: String {
        switch self {
        case .memory: return "Reservoir memory"
        case .sqlite: return "Reservoir SQLite"
        case .rawSQLite: return "raw SQLite C"
        case .lmdb: return "Reservoir LMDB"
        case .rawLMDB: return "raw LMDB C"
        case .postgres: return "Reservoir PostgreSQL"
        case .rawLibpq: return "raw libpq C"
        case .grdb: return "GRDB"
        }
    }

    var isReservoir: Bool { self == .memory || self == .sqlite || self == .lmdb || self == .postgres }

    /// The raw C side of the same engine, which a cell in this column is divided by (GRDB
    /// runs on SQLite too); nil for memory, which has no engine beneath it.
    var engine: TableColumn? {
        switch self {
        case .sqlite, .grdb: return .rawSQLite
        case .lmdb: return .rawLMDB
        case .postgres: return .rawLibpq
        default: return nil
        }
    }
}

/// One cell: a time, a time with its spread (cross-process median and p99), or words.
enum Cell {
    case time(Duration)
    case latency(median: Duration, p99: Duration)
    case text(String)

    /// The figure a ratio compares: a time, or a latency's median.
    var figure: Duration? {
        switch self {
        case .time(let time): return time
        case .latency(let median, _): return median
        case .text: return nil
        }
    }

    var rendered: String {
        switch self {
        case .time(let time): return Self.format(time)
        case .latency(let median, let p99): return "median \(Self.format(median)), p99 \(Self.format(p99))"
        case .text(let text): return text
        }
    }

    static func format(_ duration: Duration) -> String {
        let seconds = Timing.seconds(duration)
        if seconds >= 1 { return String(format: "%.2f s", seconds) }
        if seconds >= 0.01 { return String(format: "%.1f ms", seconds * 1e3) }
        if seconds >= 0.001 { return String(format: "%.2f ms", seconds * 1e3) }
        return String(format: "%.0f µs", seconds * 1e6)
    }
}

/// The rows as they are measured, printed as one Markdown table in which every Reservoir
/// (and GRDB) figure also shows its ratio to its own engine's raw C side.
struct MarkdownTable {
    private(set) var rows: [(workload: String, cells: [TableColumn: Cell], engines: [TableColumn: Cell])] = []

    /// Adds a row and shows it on stderr at once, so a run stopped part-way still shows
    /// the rows it finished. `engines`: where the raw sides' figures come from when the row
    /// has none of its own (a `Codable` line divides by the raw figures of the line above).
    mutating func add(_ workload: String, _ cells: [TableColumn: Cell], engines: [TableColumn: Cell]? = nil) {
        rows.append((workload, cells, engines ?? cells))
        ProgressLog.note(Self.line(workload, cells, engines ?? cells))
    }

    private static func line(_ workload: String, _ cells: [TableColumn: Cell], _ engines: [TableColumn: Cell]) -> String {
        let rendered = TableColumn.allCases.map { column in cells[column].map { render($0, engines: engines, column: column) } ?? "n/a" }
        return "| \(workload) | " + rendered.joined(separator: " | ") + " |"
    }

    /// "1.23 ms (1.14x)": the cell and its ratio to its engine's raw C side in `engines`.
    static func render(_ cell: Cell, engines: [TableColumn: Cell], column: TableColumn) -> String {
        guard let engine = column.engine, let figure = cell.figure,
              let raw = engines[engine]?.figure, raw > .zero else { return cell.rendered }
        let ratio = Timing.seconds(figure) / Timing.seconds(raw)
        let text = ratio >= 0.1 ? String(format: "%.2fx", ratio) : String(format: "%.2gx", ratio)
        return "\(cell.rendered) (\(text))"
    }

    var markdown: String {
        let titles = TableColumn.allCases.map { column in column.engine.map { "\(column.title) (× \($0.title))" } ?? column.title }
        var lines = ["| workload | " + titles.joined(separator: " | ") + " |"]
        lines.append("|" + String(repeating: " --- |", count: TableColumn.allCases.count + 1))
        for row in rows { lines.append(Self.line(row.workload, row.cells, row.engines)) }
        return lines.joined(separator: "\n")
    }
}
