import Foundation
import GRDB
import Reservoir

/// The live-subscription rows: Reservoir's subscriptions against GRDB's ValueObservation.
extension TableRun {
    private var cap: Duration { .seconds(settings.capSeconds) }
    private var didNotFinish: Cell { .text("did not finish in \(settings.capSeconds) s") }

    /// One-record commit -> 1 and 100 subscriptions to the whole sorted table notified.
    func subscriptionRows() throws {
        for size in settings.subscriptionSizes {
            var one: [TableColumn: Cell] = [:]
            var hundred: [TableColumn: Cell] = [:]
            // New values for the second half, or its writes would change nothing and notify no one.
            let commits = (0..<2).map { commitRecords(settings.subscriptionCommits, records: size, groups: max(1, size / BenchRecord.groupSize), round: $0) }
            for column in [TableColumn.memory, .sqlite, .lmdb] {
                let (oneCell, hundredCell) = try reservoirPair(column, records: size, first: 1, more: 99, commits: commits,
                                                                   notified: (1, 100)) { _ in ReservoirSides.sorted }
                one[column] = oneCell
                hundred[column] = hundredCell
                ProgressLog.note("subscriptions over \(Self.count(size)) records: \(column.title) done")
            }
            let (oneCell, hundredCell) = try grdbPair(records: size, first: 1, more: 99, commits: commits.map { Array($0.prefix(5)) },
                                                        notified: (1, 100)) { _ in GRDBSide.sorted }
            one[.grdb] = oneCell
            hundred[.grdb] = hundredCell
            ProgressLog.note("subscriptions over \(Self.count(size)) records: GRDB ValueObservation done")
            table.add("one-record commit → 1 live subscription notified, \(Self.count(size)) records", one)
            table.add("one-record commit → 100 live subscriptions notified, \(Self.count(size)) records", hundred)
        }
    }

    /// Distinct subscriptions (one per group, 100 records each at the full size): first 100,
    /// then all of them, each commit affecting exactly one, over the largest store.
    func distinctRows() throws {
        let size = settings.distinctRecords
        let total = settings.distinctSubscriptions
        let few = min(100, total)
        var fewCells: [TableColumn: Cell] = [:]
        var allCells: [TableColumn: Cell] = [:]
        let commits = (2..<4).map { commitRecords(settings.distinctCommits, records: size, groups: few, round: $0) }
        for column in [TableColumn.memory, .sqlite, .lmdb] {
            let (fewCell, allCell) = try reservoirPair(column, records: size, first: few, more: total - few, commits: commits,
                                                                     notified: (1, 1), request: ReservoirSides.group)
            fewCells[column] = fewCell
            allCells[column] = allCell
            ProgressLog.note("distinct subscriptions: \(column.title) done")
        }
        let (fewCell, allCell) = try grdbPair(records: size, first: few, more: total - few, commits: commits.map { Array($0.prefix(3)) },
                                                          notified: (1, 1)) { group in
            GRDBRecord.filter(Column("grp") == group).order(Column("rank"), Column("name"))
        }
        fewCells[.grdb] = fewCell
        allCells[.grdb] = allCell
        ProgressLog.note("distinct subscriptions: GRDB ValueObservation done")
        let n = Self.count(size)
        table.add("one-record commit → 1 of \(Self.count(few)) distinct subscriptions notified, \(n) records", fewCells)
        table.add("one-record commit → 1 of \(Self.count(total)) distinct subscriptions notified, \(n) records", allCells)
    }

    /// A new store of `column` holding the first `records` records, `first` subscriptions to
    /// `request(0..<first)`, timed over `commits[0]`; then `more` subscriptions to the requests
    /// after those, timed over `commits[1]`. `notified`: how many subscribers each commit reaches, each time.
    private func reservoirPair(_ column: TableColumn, records: Int, first: Int, more: Int, commits: [[BenchRecord]], notified: (Int, Int),
                               request: @escaping (Int) -> Reservoir.FetchRequest<BenchRecord>) throws -> (Cell, Cell) {
        let (store, directory) = try ReservoirSide(column).openFresh()
        defer { store.close(); try? FileManager.default.removeItem(at: directory) }
        try store.write { tx in for record in dataset.records.prefix(records) { try tx.insert(record) } }
        let subscriptions = ReservoirSubscriptions(store: store)
        defer { subscriptions.cancel() }
        try subscriptions.subscribe(first, deadline: .now + cap, request: request)
        let before = try subscriptions.commitLatency(commits[0], notified: notified.0, deadline: .now + cap)
        try subscriptions.subscribe(more, deadline: .now + cap) { request(first + $0) }
        let after = try subscriptions.commitLatency(commits[1], notified: notified.1, deadline: .now + cap)
        return (.time(before), .time(after))
    }

    /// The same on GRDB with ValueObservation, each step capped: a step that passes the cap
    /// (and every step after it) did not finish.
    private func grdbPair(records: Int, first: Int, more: Int, commits: [[BenchRecord]], notified: (Int, Int),
                          request: @escaping @Sendable (Int) -> QueryInterfaceRequest<GRDBRecord>) throws -> (Cell, Cell) {
        let (pool, directory) = try GRDBSide.openFresh()
        defer { try? pool.close(); try? FileManager.default.removeItem(at: directory) }
        try pool.write { db in for record in dataset.records.prefix(records) { try GRDBRecord(record).insert(db) } }
        let observations = GRDBObservations(pool: pool)
        defer { observations.cancel() }
        let grdbCommits = commits.map { $0.map(GRDBRecord.init) }
        var deadline = ContinuousClock.now + cap
        guard observations.observe(first, deadline: deadline, request: request),
              let before = try observations.commitLatency(grdbCommits[0], notified: notified.0, deadline: deadline) else {
            return (didNotFinish, didNotFinish)
        }
        deadline = .now + cap
        guard observations.observe(more, deadline: deadline, request: { request(first + $0) }),
              let after = try observations.commitLatency(grdbCommits[1], notified: notified.1, deadline: deadline) else {
            return (.time(before), didNotFinish)
        }
        return (.time(before), .time(after))
    }
}
