/// Sectioned identity-based changes (``SectionedResultsChange``): groups the previous and
/// current lists into runs of equal section-key values, matches sections by key, and
/// works out the row changes in the sections both lists have with ``ResultsChange``.
struct SectionsOutput<Record: Storable, Key: ValueConvertible>: LiveOutput {
    let keyPath: KeyPath<Record, Key>
    /// The key's column, or why the key path cannot be a section key.
    let column: Result<String, ReservoirError>

    init(keyPath: KeyPath<Record, Key>) {
        self.keyPath = keyPath
        column = Result { try Record.schema.column(for: keyPath) }.mapError { $0 as? ReservoirError ?? ReservoirError(.invalidQuery, "\($0)") }
    }

    var needsPreviousList: Bool { true }

    /// Sections follow the sort only when the key is its first term (FRC's rule too).
    func check(_ query: Query) throws {
        let column = try column.get()
        guard let first = query.sort.first, first.column == column else {
            let sortedBy = query.sort.first.map { "\"\($0.column)\"" } ?? "nothing"
            throw ReservoirError(
                .invalidQuery,
                "sections by \(keyPath) (column \"\(column)\") need it as the request's first sort key, but \(Record.self)'s request sorts by \(sortedBy) first; put .ascending(\(keyPath)) or .descending(\(keyPath)) first in sortBy"
            )
        }
    }

    func value(previous: ChunkedList<LiveEntry<Record>>, current: ChunkedList<LiveEntry<Record>>, delta: LiveResults<Record>.Delta, initial: Bool) throws -> SectionedResultsChange<Key, Record>? {
        guard initial || !delta.isEmpty else { return nil }
        let column = try self.column.get()
        let old = Self.runs(previous.array, column: column)
        let new = Self.runs(current.array, column: column)
        let newKeys = Set(new.map { $0.value })
        let oldKeys = Set(old.map { $0.value })
        let deletedSections = old.indices.filter { !newKeys.contains(old[$0].value) }
        let insertedSections = new.indices.filter { !oldKeys.contains(new[$0].value) }

        // Row changes within the sections both lists have, as one flat list each.
        typealias Path = SectionedResultsChange<Key, Record>.ItemPath
        func flatten(_ runs: [Run], keeping keys: Set<Reservoir.Value>) -> (entries: [LiveEntry<Record>], paths: [Path]) {
            var entries: [LiveEntry<Record>] = []
            var paths: [Path] = []
            for (section, run) in runs.enumerated() where keys.contains(run.value) {
                for (item, entry) in run.entries.enumerated() {
                    entries.append(entry)
                    paths.append(Path(section: section, item: item))
                }
            }
            return (entries, paths)
        }
        let kept = oldKeys.intersection(newKeys)
        let (oldFlat, oldPaths) = flatten(old, keeping: kept)
        let (newFlat, newPaths) = flatten(new, keeping: kept)
        let flat = ResultsChange(from: oldFlat, to: newFlat)
        var moved = flat.moved.map { SectionedResultsChange<Key, Record>.Paths(old: oldPaths[$0.old], new: newPaths[$0.new]) }
        var updated: [SectionedResultsChange<Key, Record>.Paths] = []
        for positions in flat.updated {
            let paths = SectionedResultsChange<Key, Record>.Paths(old: oldPaths[positions.old], new: newPaths[positions.new])
            // In place among the kept rows, but under another key: it changed section.
            if old[paths.old.section].value == new[paths.new.section].value {
                updated.append(paths)
            } else {
                moved.append(paths)
            }
        }
        let sections = new.map { run in
            ResultsSection(key: run.entries[0].record[keyPath: keyPath], records: run.entries.map { $0.record })
        }
        return SectionedResultsChange(
            sections: sections, deletedSections: deletedSections, insertedSections: insertedSections,
            deleted: flat.deleted.map { oldPaths[$0] }, inserted: flat.inserted.map { newPaths[$0] },
            moved: moved.sorted { $0.new < $1.new }, updated: updated
        )
    }

    /// One run of entries with equal key values (by the contract's order, so byte-wise for text).
    struct Run {
        let value: Reservoir.Value
        var entries: [LiveEntry<Record>]
    }

    static func runs(_ entries: [LiveEntry<Record>], column: String) -> [Run] {
        var runs: [Run] = []
        for entry in entries {
            let value = entry.row.value(column)
            if let last = runs.last, last.value == value {
                runs[runs.count - 1].entries.append(entry)
            } else {
                runs.append(Run(value: value, entries: [entry]))
            }
        }
        return runs
    }
}
