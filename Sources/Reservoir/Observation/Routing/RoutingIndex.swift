/// The ``ChangeHub``'s index of its observers by what can affect them, so a commit costs
/// work in proportion to the observers it affects rather than to how many exist.
///
/// Observers without a route (raw change-set streams, record and type publishers) get
/// every change set. A routed observer with an unkeyed route gets every change set that
/// touches its entity. A keyed observer gets a change set when a changed row's new value
/// of its column is one of its keys (for a ranged one: is in its range, see ``RangeRoutes``),
/// or when it holds one of the changed ids (asked of ``RecordHolders``, the store's shared
/// record table, which keeps each held record once for every purpose); until it is ready
/// (``setReady(_:)``) it gets every change to its entity, so a record its initial fetch saw
/// and an early change moved away still reaches it.
/// Incomplete change sets (history lost to retention) go to everyone.
///
/// Not thread-safe: the hub guards it with its lock.
struct RoutingIndex {
    private struct EntityRoutes {
        /// Unkeyed observers, and keyed ones that have not yet said what they hold.
        var everyChange: Set<UInt64> = []
        /// Keyed observers by column, then by key.
        var byKey: [String: [Value: [UInt64]]] = [:]
        /// Ranged observers by column.
        var byRange: [String: RangeRoutes] = [:]

        var isEmpty: Bool { everyChange.isEmpty && byKey.isEmpty && byRange.isEmpty }
    }

    private var unrouted: Set<UInt64> = []
    private var routes: [UInt64: SubscriptionRoute] = [:]
    private var entities: [String: EntityRoutes] = [:]

    /// Every observer that could be affected by some change (for failures and lost history).
    private(set) var all: Set<UInt64> = []

    /// Adds an observer; `route` nil means every change set.
    mutating func add(_ token: UInt64, route: SubscriptionRoute?) {
        all.insert(token)
        guard let route else {
            unrouted.insert(token)
            return
        }
        routes[token] = route
        entities[route.entity, default: EntityRoutes()].everyChange.insert(token)
    }

    /// Switches a keyed observer from "every change to its entity" to its keys and holdings.
    mutating func setReady(_ token: UInt64) {
        guard let route = routes[token], let column = route.column else { return }
        entities[route.entity]?.everyChange.remove(token)
        if let range = route.range {
            var routes = entities[route.entity] ?? EntityRoutes()
            let ranged = routes.byRange[column] ?? RangeRoutes()
            ranged.insert(token, range)
            routes.byRange[column] = ranged
            entities[route.entity] = routes
            return
        }
        for key in Set(route.keys) {
            entities[route.entity, default: EntityRoutes()].byKey[column, default: [:]][key, default: []].append(token)
        }
    }

    /// Removes an observer.
    mutating func remove(_ token: UInt64) {
        all.remove(token)
        unrouted.remove(token)
        guard let route = routes.removeValue(forKey: token) else { return }
        guard var routes = entities.removeValue(forKey: route.entity) else { return }
        routes.everyChange.remove(token)
        if let column = route.column {
            if route.range != nil, let ranged = routes.byRange[column] {
                ranged.remove(token)
                if ranged.isEmpty { routes.byRange[column] = nil }
            }
            for key in Set(route.keys) {
                routes.byKey[column]?[key]?.removeAll { $0 == token }
                if routes.byKey[column]?[key]?.isEmpty == true { routes.byKey[column]?[key] = nil }
            }
            if routes.byKey[column]?.isEmpty == true { routes.byKey[column] = nil }
        }
        if !routes.isEmpty { entities[route.entity] = routes }
    }

    /// The observers `changeSet` can affect, in the order they were added, with `holders`
    /// saying who holds a changed record.
    func targets(of changeSet: ChangeSet, holders: some RecordHolders) -> [UInt64] {
        guard changeSet.isComplete else { return all.sorted() }
        var found = unrouted
        for changes in changeSet.entities {
            guard let routes = entities[changes.entity] else { continue }
            found.formUnion(routes.everyChange)
            for (column, byKey) in routes.byKey {
                for change in changes.inserted { byKey[change.row.value(column)].map { found.formUnion($0) } }
                for change in changes.updated { byKey[change.row.value(column)].map { found.formUnion($0) } }
            }
            for (column, ranged) in routes.byRange {
                for change in changes.inserted { ranged.forEachContaining(change.row.value(column)) { found.insert($0) } }
                for change in changes.updated { ranged.forEachContaining(change.row.value(column)) { found.insert($0) } }
            }
            // Only keyed observers need their holdings looked up: the rest get every change.
            guard !routes.byKey.isEmpty || !routes.byRange.isEmpty else { continue }
            var ids: [Value] = []
            ids.reserveCapacity(changes.updated.count + changes.deleted.count + changes.inserted.count)
            for change in changes.updated { ids.append(change.id) }
            ids.append(contentsOf: changes.deleted)
            // An insert of a held id (a delete and re-insert netted oddly by a change log).
            for change in changes.inserted { ids.append(change.id) }
            var held: Set<UInt64> = []
            holders.formHolders(of: ids, entity: changes.entity, into: &held)
            // A fetch's records outlive its route for a moment as it closes: skip those.
            for token in held where self.routes[token] != nil { found.insert(token) }
        }
        return found.sorted()
    }

    /// The observers `changeSet` can affect when no record is held.
    func targets(of changeSet: ChangeSet) -> [UInt64] {
        targets(of: changeSet, holders: NoRecordHolders())
    }
}

/// Holds nothing: routing by keys and ranges alone.
struct NoRecordHolders: RecordHolders {
    func formHolders(of ids: [Value], entity: String, into tokens: inout Set<UInt64>) {}
}
