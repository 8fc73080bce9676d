extension Store {
    /// Walks the whole store and reports damage instead of throwing or crashing on it: the
    /// backend's own check of its files (SQLite's `PRAGMA integrity_check`, LMDB's page
    /// walk), then every record type's rows read and counted, each index compared with the
    /// rows it indexes, and the change log read and checked for order. Throws only when the
    /// store cannot be used at all (`.closed`).
    ///
    ///     let report = try store.verify()
    ///     guard report.isIntact else { showRestoreOffer(report.problems); return }
    public func verify() throws -> VerificationReport {
        try checkOpen()
        var report = VerificationReport()
        let files: FileCheck
        do {
            files = try backend.verifyFiles()
        } catch let error as ReservoirError where error.code != .closed {
            files = FileCheck(problems: [named(error).message], readable: false)
        }
        report.problems += files.problems
        guard files.readable else {
            report.recordsRead = false
            return report
        }
        let entities: [EntityDescription]
        do {
            entities = try backend.read { try $0.entities() }
        } catch let error as ReservoirError where error.code != .closed {
            report.problems.append("the list of record types cannot be read: \(error.description)")
            return report
        }
        for entity in entities {
            verify(entity, into: &report)
        }
        do {
            // In one snapshot, 1,000 change sets at a time.
            try backend.read { reader in
                let last = try reader.lastSequence()
                report.lastSequence = last
                var previous: UInt64 = 0
                while true {
                    let log = try reader.changeLog(after: previous, limit: 1000)
                    guard !log.isEmpty else { break }
                    report.changeLogEntries += log.count
                    let after = previous
                    for entry in log {
                        if entry.sequence <= after || entry.sequence < previous || entry.sequence > last {
                            report.problems.append("the change log is out of order: sequence \(entry.sequence) after \(previous), the last being \(last)")
                            return
                        }
                        previous = entry.sequence
                    }
                }
            }
        } catch let error as ReservoirError where error.code != .closed {
            report.problems.append("the change log cannot be read: \(error.description)")
        }
        return report
    }

    /// Reads every row of `entity`, then asks each index for every value it should hold.
    private func verify(_ entity: EntityDescription, into report: inout VerificationReport) {
        var rows: [Row] = []
        do {
            let counted = try backend.read { reader -> Int in
                try reader.fetch(Query(entity: entity)) { rows.append($0) }
                return try reader.count(Query(entity: entity))
            }
            report.entities.append(.init(name: entity.name, rows: rows.count))
            if counted != rows.count {
                report.problems.append("\(entity.name): counting finds \(counted) rows, reading finds \(rows.count)")
            }
        } catch let error as ReservoirError where error.code != .closed {
            report.entities.append(.init(name: entity.name, rows: rows.count))
            report.problems.append("\(entity.name): rows cannot be read (after \(rows.count)): \(error.description)")
            return
        } catch {
            report.problems.append("\(entity.name): \(error)")
            return
        }
        var ids = Set<Value>()
        for row in rows where !ids.insert(row.value(entity.idColumn)).inserted {
            report.problems.append("\(entity.name): id \(row.value(entity.idColumn)) is stored twice")
            break
        }
        for column in entity.indexes {
            // Every distinct value (at most 200 of them), looked up through the index.
            var byValue: [Value: Set<Value>] = [:]
            for row in rows { byValue[row.value(column), default: []].insert(row.value(entity.idColumn)) }
            for (value, expected) in byValue.prefix(200) {
                do {
                    let query = try Query(entity: entity, predicate: .compare(column: column, .equal, value))
                    let found = try backend.read { try $0.fetch(query) }
                    let foundIDs = Set(found.map { $0.value(entity.idColumn) })
                    if foundIDs != expected {
                        report.problems.append("\(entity.name): the index on \(column) disagrees with the rows for \(value): \(expected.count) rows hold it, the index finds \(foundIDs.count)")
                        break
                    }
                } catch {
                    report.problems.append("\(entity.name): the index on \(column) cannot be read for \(value): \(error)")
                    break
                }
            }
        }
    }
}
