import Foundation

/// One store's decoded records held by live fetches, once each: a record that several
/// live fetches hold (overlapping ranges, the same records in two sort orders) is decoded
/// and kept once, and each fetch's list points at the one ``LiveEntry``.
///
/// Entries are kept by record type, entity and id, and list the fetches holding them (by
/// their ``ChangeHub`` token). That one index per entity is also what a fetch asks for its
/// own version of a changed record, and what the hub asks for a changed record's holders,
/// so a held record costs one bucket in all, not one map entry here, one per fetch and one
/// for routing.
/// An entry is reused only for exactly its row (``Row/==``), so a change set's new version
/// of a record replaces it for the next fetch that asks, and fetches still holding the old
/// version keep theirs until their own change arrives. Sharing is best effort: a lookup
/// that misses decodes a copy, never a wrong version.
final class SharedRecords: RecordHolders, @unchecked Sendable {
    // @unchecked: `tables` and `byEntity` are guarded by `lock`. Lock order: the hub's lock,
    // then this one, then a table's; a table never calls out.
    private struct TableKey: Hashable {
        let type: ObjectIdentifier
        let entity: String
    }

    /// Guards `tables` and `byEntity`. Lock order: 4th of the store's five (see
    /// ``ChangeHub``): taken under the hub's; a table's may be taken under it.
    private let lock = NSLock()
    private var tables: [TableKey: AnyObject] = [:]
    /// Every table of an entity (one per record type decoding it), for routing.
    private var byEntity: [String: [any HeldRecordTable]] = [:]

    /// The table of `T` records of `entity`.
    func table<T: Storable>(for type: T.Type, entity: String) -> SharedRecordTable<T> {
        lock.lock()
        defer { lock.unlock() }
        let key = TableKey(type: ObjectIdentifier(type), entity: entity)
        if let table = tables[key] as? SharedRecordTable<T> { return table }
        let table = SharedRecordTable<T>()
        tables[key] = table
        byEntity[entity, default: []].append(table)
        return table
    }

    func formHolders(of ids: [Value], entity: String, into tokens: inout Set<UInt64>) {
        lock.lock()
        defer { lock.unlock() }
        for table in byEntity[entity] ?? [] { table.formHolders(of: ids, into: &tokens) }
    }
}
