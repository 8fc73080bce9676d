import Foundation

/// The table's columns, in order: Reservoir's three backends, then the peers.
enum TableColumn: CaseIterable {
    case memory, sqlite, lmdb, rawSQLite, rawLMDB, grdb

    var title: String {
        switch self {
        case .memory: return "Reservoir memory"
        case .sqlite: return "Reservoir SQLite"
        case .lmdb: return "Reservoir LMDB"
        case .rawSQLite: return "raw SQLite C"
        case .rawLMDB: return "raw LMDB C"
        case .grdb: return "GRDB"
        }
    }

    /// How a ratio names the peer it is against.
    var shortName: String {
        switch self {
        case .rawSQLite: return "raw SQLite C"
        case .rawLMDB: return "raw LMDB C"
        case .grdb: return "GRDB"
        default: return title
        }
    }

    var isReservoir: Bool { self == .memory || self == .sqlite || self == .lmdb }
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
/// figure also shows its ratio to the fastest peer in its row.
struct MarkdownTable {
    private(set) var rows: [(workload: String, cells: [TableColumn: Cell])] = []

    /// Adds a row and shows it on stderr at once, so a run stopped part-way still shows
    /// the rows it finished.
    mutating func add(_ workload: String, _ cells: [TableColumn: Cell]) {
        rows.append((workload, cells))
        ProgressLog.note(Self.line(workload, cells))
    }

    private static func line(_ workload: String, _ cells: [TableColumn: Cell]) -> String {
        let rendered = TableColumn.allCases.map { column in cells[column].map { render($0, in: cells, column: column) } ?? "n/a" }
        return "| \(workload) | " + rendered.joined(separator: " | ") + " |"
    }

    /// "1.23 ms (1.4x raw SQLite C)": the cell and its ratio to the row's fastest peer.
    static func render(_ cell: Cell, in cells: [TableColumn: Cell], column: TableColumn) -> String {
        guard column.isReservoir, let figure = cell.figure else { return cell.rendered }
        let peers = cells.filter { !$0.key.isReservoir }.compactMap { key, value in value.figure.map { (key, $0) } }
        guard let best = peers.min(by: { $0.1 < $1.1 }), best.1 > .zero else { return cell.rendered }
        let ratio = Timing.seconds(figure) / Timing.seconds(best.1)
        let text = ratio >= 0.1 ? String(format: "%.2fx", ratio) : String(format: "%.2gx", ratio)
        return "\(cell.rendered) (\(text) \(best.0.shortName))"
    }

    var markdown: String {
        var lines = ["| workload | " + TableColumn.allCases.map(\.title).joined(separator: " | ") + " |"]
        lines.append("|" + String(repeating: " --- |", count: TableColumn.allCases.count + 1))
        for row in rows { lines.append(Self.line(row.workload, row.cells)) }
        return lines.joined(separator: "\n")
    }
}
