/// One commit's effect on a fetch's results grouped into sections, for sectioned list UIs
/// (NSFetchedResultsController's section and object changes). Sections follow the
/// request's order: the section key is its first sort key, so each key's records are
/// contiguous and sections never move relative to each other.
///
/// **Index convention** (UIKit batch updates use the same): `deletedSections`, `deleted`
/// and `moved.old` are positions before the change; `insertedSections`, `inserted` and
/// `moved.new` are positions after it; each `updated` entry gives both. Applying a change:
///
/// 1. remove the items at `deleted` and every `moved.old`, highest path first;
/// 2. remove the sections at `deletedSections`, highest first;
/// 3. insert `sections[i]`, with all its records, at every `insertedSections` position `i`, lowest first;
/// 4. insert `sections[p.section].records[p.item]` at every `inserted` and `moved.new` path `p`, lowest first;
/// 5. replace the item at every `updated.new` path `p` with `sections[p.section].records[p.item]`.
///
/// The outcome is exactly `sections`. Rows of a deleted section are not listed in
/// `deleted`, nor rows of an inserted section in `inserted` (deleting or inserting the
/// section covers them). A record leaving a deleted section for a kept one is `inserted`
/// there; one leaving a kept section for a new one is `deleted` from it. `moved` and
/// `updated` only join kept sections; a record whose section key changed is always
/// `moved`. Otherwise the rules are ``ResultsChange``'s: same place with new content is
/// `updated`, a changed place is `moved`.
public struct SectionedResultsChange<Key: Sendable, Record: Sendable>: Sendable {
    /// A record's place: its section and its position within the section.
    public struct ItemPath: Sendable, Hashable, Comparable, CustomStringConvertible {
        /// The section's position.
        public let section: Int
        /// The record's position within its section.
        public let item: Int

        /// A path; for building expected values in tests.
        public init(section: Int, item: Int) {
            self.section = section
            self.item = item
        }

        /// Section first, then item: the order the convention applies paths in.
        public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
            (lhs.section, lhs.item) < (rhs.section, rhs.item)
        }

        public var description: String { "[\(section), \(item)]" }
    }

    /// A place before and after the change.
    public struct Paths: Sendable, Hashable {
        /// The path before the change.
        public let old: ItemPath
        /// The path after the change.
        public let new: ItemPath

        /// A pair of paths; for building expected values in tests.
        public init(old: ItemPath, new: ItemPath) {
            self.old = old
            self.new = new
        }
    }

    /// The sections after the change.
    public let sections: [ResultsSection<Key, Record>]
    /// Positions before the change of sections whose key no record has now.
    public let deletedSections: [Int]
    /// Positions after the change of sections whose key no record had before.
    public let insertedSections: [Int]
    /// Paths before the change of records that left a kept section.
    public let deleted: [ItemPath]
    /// Paths after the change of records that joined a kept section.
    public let inserted: [ItemPath]
    /// Records that stayed in kept sections but changed place (or section).
    public let moved: [Paths]
    /// Records that stayed in place with new content.
    public let updated: [Paths]

    /// Whether nothing changed.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deleted.isEmpty && inserted.isEmpty && moved.isEmpty && updated.isEmpty
    }

    init(sections: [ResultsSection<Key, Record>], deletedSections: [Int], insertedSections: [Int],
         deleted: [ItemPath], inserted: [ItemPath], moved: [Paths], updated: [Paths]) {
        self.sections = sections
        self.deletedSections = deletedSections
        self.insertedSections = insertedSections
        self.deleted = deleted
        self.inserted = inserted
        self.moved = moved
        self.updated = updated
    }

    /// Applies this change to `previous` by the documented convention; the outcome equals
    /// ``sections`` when `previous` is what the earlier changes built. For keeping a parallel
    /// structure (table sections, view models) in step. A structure this change does not fit
    /// (a section or item position past its end) throws `.misuse` naming it, and nothing is changed.
    public func applied(to previous: [ResultsSection<Key, Record>]) throws -> [ResultsSection<Key, Record>] {
        func misfit(_ what: String) -> ReservoirError {
            ReservoirError(.misuse, "SectionedResultsChange.applied(to:): \(what) does not fit the \(previous.count) sections given; apply every change in order to the sections the previous ones built")
        }
        var keys = previous.map { $0.key }
        var lists = previous.map { $0.records }
        for path in (deleted + moved.map { $0.old }).sorted(by: >) {
            guard lists.indices.contains(path.section), lists[path.section].indices.contains(path.item) else { throw misfit("removing \(path)") }
            lists[path.section].remove(at: path.item)
        }
        for section in deletedSections.sorted(by: >) {
            guard lists.indices.contains(section) else { throw misfit("deleting section \(section)") }
            keys.remove(at: section)
            lists.remove(at: section)
        }
        for section in insertedSections.sorted() {
            guard section >= 0, section <= lists.count, sections.indices.contains(section) else { throw misfit("inserting section \(section)") }
            keys.insert(sections[section].key, at: section)
            lists.insert(sections[section].records, at: section)
        }
        for path in (inserted + moved.map { $0.new }).sorted() {
            guard lists.indices.contains(path.section), path.item >= 0, path.item <= lists[path.section].count,
                  sections.indices.contains(path.section), sections[path.section].records.indices.contains(path.item)
            else { throw misfit("inserting \(path)") }
            lists[path.section].insert(sections[path.section].records[path.item], at: path.item)
        }
        for paths in updated {
            let path = paths.new
            guard lists.indices.contains(path.section), lists[path.section].indices.contains(path.item),
                  sections.indices.contains(path.section), sections[path.section].records.indices.contains(path.item)
            else { throw misfit("updating \(path)") }
            lists[path.section][path.item] = sections[path.section].records[path.item]
        }
        guard lists.count == sections.count, zip(lists, sections).allSatisfy({ $0.count == $1.records.count }) else {
            throw misfit("the result's shape (\(lists.map(\.count)) items per section, expected \(sections.map(\.records.count)))")
        }
        return zip(keys, lists).map { ResultsSection(key: $0, records: $1) }
    }
}
