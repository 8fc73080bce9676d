import ArgumentParser
import Foundation
import Reservoir

struct CopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy every record of every type from one store to another, then verify the counts.",
        discussion: """
            Works on any store, with or without the app's Swift types: rows are backend-neutral.
            Records already in the destination with the same id are replaced.

            Example: reservoir copy sqlite:./todos.sqlite lmdb:./todos.lmdb
            """
    )
    @Argument(help: "The store to read, such as sqlite:./app.sqlite.") var source: String
    @Argument(help: "The store to write, such as lmdb:./app.lmdb.") var destination: String
    @Option(help: "Records per transaction.") var batch = 1000

    func validate() throws {
        if batch < 1 { throw ValidationError("--batch \(batch) is not a positive count") }
    }

    func run() throws {
        try reporting {
            let from = try Store.open(source, registry: Backends.registry)
            defer { from.close() }
            let to = try Store.open(destination, registry: Backends.registry)
            defer { to.close() }
            let entities = try from.read { try $0.entities() }
            let progress = Progress(enabled: isTerminal(STDERR_FILENO))
            var copied = 0
            var unreadable: [String] = []
            for entity in entities {
                let total = try? from.read { try $0.count(Query(entity: entity)) }
                let before = try to.read { try $0.count(Query(entity: entity)) }
                var inserted = 0, done = 0
                var last: Value?
                var lost: String?
                var size = batch
                while true {
                    // Pages by id, so memory stays bounded and each page is one indexed range read.
                    let page: [Row]
                    do {
                        page = try from.read { snapshot in
                            try snapshot.rows(Query(entity: entity, predicate: last.map { .compare(column: entity.idColumn, .greater, $0) },
                                                    sort: [SortTerm(column: entity.idColumn)], limit: size))
                        }
                    } catch let error as ReservoirError where error.code != .closed && size > 1 {
                        size /= 2  // a damaged source: read up to the damage in smaller pages
                        continue
                    } catch let error as ReservoirError where error.code != .closed {
                        // A damaged source: save what lies beyond the damage, reading down from the top.
                        let (count, added, lowest) = try salvage(entity, above: last, from: from, to: to)
                        done += count
                        inserted += added
                        lost = "\(entity.name): the records with ids after \(last.map { "\($0)" } ?? "the first") and before \(lowest.map { "\($0)" } ?? "the end") could not be read (\(error)); \(done) records were saved"
                        break
                    }
                    guard let final = page.last else { break }
                    inserted += try to.write { tx in
                        try page.reduce(0) { count, row in try tx.putRow(row, in: entity) == .inserted ? count + 1 : count }
                    }
                    done += page.count
                    last = final.value(entity.idColumn)
                    progress.show("\(entity.name)", done, total ?? done)
                }
                progress.finish()
                let after = try to.read { try $0.count(Query(entity: entity)) }
                if let lost {
                    unreadable.append(lost)
                } else if done != total || after != before + inserted {
                    throw CommandFailure("copying \"\(entity.name)\" from \(source) to \(destination) did not verify: read \(done) of \(total.map(String.init) ?? "?") records; destination has \(after), expected \(before + inserted)")
                }
                print("\(entity.name): \(done) record\(done == 1 ? "" : "s") copied (\(inserted) new, \(done - inserted) replaced)")
                copied += done
            }
            guard unreadable.isEmpty else {
                print("copied \(copied) record\(copied == 1 ? "" : "s") of \(entities.count) type\(entities.count == 1 ? "" : "s"); the source is damaged, not all could be read:")
                for line in unreadable { print("unreadable: " + line) }
                throw CommandFailure("\(source) is damaged: \(unreadable.count) record type\(unreadable.count == 1 ? "" : "s") copied in part; reservoir verify --store \(source) lists the damage")
            }
            print("copied \(copied) record\(copied == 1 ? "" : "s") of \(entities.count) type\(entities.count == 1 ? "" : "s"); counts verified")
        }
    }

    /// Copies `entity`'s records with ids above `above` from the top down, page by page, until
    /// a page cannot be read; returns how many were copied, how many were new, and the lowest
    /// id reached.
    private func salvage(_ entity: EntityDescription, above: Value?, from: Store, to: Store) throws -> (Int, Int, Value?) {
        var count = 0, inserted = 0
        var lowest: Value?
        var size = batch
        while true {
            var parts: [RowPredicate] = []
            if let above { parts.append(.compare(column: entity.idColumn, .greater, above)) }
            if let lowest { parts.append(.compare(column: entity.idColumn, .less, lowest)) }
            let query = try Query(entity: entity, predicate: parts.isEmpty ? nil : .and(parts),
                                  sort: [SortTerm(column: entity.idColumn, ascending: false)], limit: size)
            guard let page = try? from.read({ try $0.rows(query) }) else {
                if size == 1 { return (count, inserted, lowest) }
                size /= 2
                continue
            }
            guard let final = page.last else { return (count, inserted, lowest) }
            inserted += try to.write { tx in
                try page.reduce(0) { count, row in try tx.putRow(row, in: entity) == .inserted ? count + 1 : count }
            }
            count += page.count
            lowest = final.value(entity.idColumn)
        }
    }
}

/// A one-line progress bar on stderr, redrawn in place; silent when stderr is not a terminal.
struct Progress {
    let enabled: Bool

    func show(_ label: String, _ done: Int, _ total: Int) {
        guard enabled else { return }
        let width = 30
        let filled = total > 0 ? min(width, done * width / total) : width
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)".utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
