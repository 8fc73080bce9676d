/// Declared schema versions, applied at open: see ``Migrations`` and Backends.md § Migrations.
extension Store {
    /// Opens the store `configuration` names (as ``open(_:registry:)`` does) and brings it to
    /// `migrations`' newest version (``migrate(_:)``). Throws, leaving the store closed and at
    /// the version it was, when a version fails (`.migrationFailed`) or when the store is at a
    /// version `migrations` does not know that is not additive (`.unknownSchemaVersion`).
    /// `progress` is called as in ``migrate(_:progress:)``.
    public static func open(_ configuration: String, registry: BackendRegistry = .shared, migrations: Migrations,
                            progress: (@Sendable (MigrationProgress) -> Void)? = nil) throws -> Store {
        let store = try open(configuration, registry: registry)
        do {
            try store.migrate(migrations, progress: progress)
        } catch {
            store.close()
            throw error
        }
        return store
    }

    /// The store's schema version: the newest version ``migrate(_:)`` applied, 0 when none was.
    public func schemaVersion() throws -> Int {
        try checkOpen()
        do {
            return try backend.read { try SchemaLedger.version($0) }
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    /// Applies each of `migrations`' versions the store has not applied, oldest first, each in
    /// one write transaction: its steps run in order, the version is recorded in the store
    /// (entity `reservoir_schema_versions`), and one change set marked
    /// ``ChangeSet/isSchemaChange`` announces it, so live fetches and history consumers
    /// re-read. A step that fails rolls its whole version back and throws `.migrationFailed`
    /// naming the version, the step, the entity and the record; versions applied before it stay.
    ///
    /// A new store (no records, no version) is stamped with the newest version in one
    /// transaction, running nothing. A store at a version newer than `migrations` knows is
    /// left as it is when every unknown version is additive (added fields and indexes only,
    /// as recorded when it was applied), and refused with `.unknownSchemaVersion` naming both
    /// versions otherwise.
    /// - Returns: the numbers of the versions applied (stamped versions included).
    @discardableResult
    public func migrate(_ migrations: Migrations) throws -> [Int] {
        try migrate(migrations, progress: nil)
    }

    /// ``migrate(_:)``, calling `progress` as each step rewrites records: at its start and end
    /// and every 1,000 records (``MigrationProgress``). `progress` runs inside the migration's
    /// write transaction, on the migrating thread: it must return quickly and must not use the
    /// store (a write from it is a nested write, refused with `.misuse`). A backend may run a
    /// version again from its first step (LMDB, when its map fills and grows; see Backends.md
    /// § Migrations): its reports then start again at 0, and its transforms run again.
    @discardableResult
    public func migrate(_ migrations: Migrations, progress: (@Sendable (MigrationProgress) -> Void)?) throws -> [Int] {
        try checkOpen()
        try migrations.validate()
        // A read first: a store already at the app's version (every launch but the first after
        // an update) needs no write, and a read-only opener can check it too.
        let upToDate: Bool
        do {
            upToDate = try backend.read { reader in
                let entries = try SchemaLedger.entries(reader)
                try SchemaLedger.checkKnown(entries, by: migrations)
                return !entries.isEmpty && migrations.latest <= (entries.last?.version ?? 0)
            }
        } catch let error as ReservoirError {
            throw named(error)
        }
        var applied: [Int] = []
        if !upToDate {
            while let versions = try applyNextVersion(migrations, progress: progress) {
                applied += versions
            }
        }
        schemaGuard.adopt(migrations)
        return applied
    }

    /// What ``migrate(_:)`` would do, changing nothing: the versions it would apply and how many
    /// records each step would touch (the records of its entity at that point). Throws
    /// `.unknownSchemaVersion` as ``migrate(_:)`` would.
    public func migrationPlan(_ migrations: Migrations) throws -> MigrationPlan {
        try checkOpen()
        try migrations.validate()
        do {
            return try backend.read { reader in
                let entries = try SchemaLedger.entries(reader)
                let current = entries.last?.version ?? 0
                try SchemaLedger.checkKnown(entries, by: migrations)
                if entries.isEmpty, try reader.entities().isEmpty, let latest = migrations.versions.last {
                    return MigrationPlan(currentVersion: 0, targetVersion: latest.number, stampsOnly: true, steps: [])
                }
                var counts: [String: Int] = [:]
                func count(_ entity: String) throws -> Int {
                    if let known = counts[entity] { return known }
                    let stored = try reader.entities().first { $0.name == entity }
                    let found = try stored.map { try reader.count(Query(entity: $0)) } ?? 0
                    counts[entity] = found
                    return found
                }
                var steps: [MigrationPlan.Step] = []
                for version in migrations.versions where version.number > current {
                    for (index, step) in version.steps.enumerated() {
                        let records = try count(step.entity)
                        steps.append(MigrationPlan.Step(version: version.number, index: index + 1, step: step, records: records))
                        switch step.action {
                        case let .renameEntity(newName), let .splitEntity(_, newName):
                            counts[newName] = records + (try count(newName))
                            if step.kind == .renameEntity { counts[step.entity] = 0 }
                        case .mergeEntity:
                            counts[step.entity] = 0
                        default:
                            break
                        }
                    }
                }
                return MigrationPlan(currentVersion: current, targetVersion: max(current, migrations.latest), stampsOnly: false, steps: steps)
            }
        } catch let error as ReservoirError {
            throw named(error)
        }
    }

    // MARK: - Running

    /// Applies the next version in one write transaction (or stamps a new store); returns the
    /// versions it recorded, or nil when there is nothing left to do.
    private func applyNextVersion(_ migrations: Migrations, progress: (@Sendable (MigrationProgress) -> Void)?) throws -> [Int]? {
        var recorded: [Int]?
        var committed: ChangeSet?
        var base = CommitPosition.start
        do {
            try writeLock.withWriter {
                // A version's steps are a function of the committed data they read, so the backend
                // may run them again in a new transaction instead of keeping every row to redo
                // (StorageBackend.rerunnableWrite): nothing of an earlier run survives it.
                try backend.rerunnableWrite { writer in
                    committed = nil
                    recorded = nil
                    // Read inside the write: another process may have migrated meanwhile.
                    let entries = try SchemaLedger.entries(writer)
                    try SchemaLedger.checkKnown(entries, by: migrations)
                    let current = entries.last?.version ?? 0
                    let pending = migrations.versions.filter { $0.number > current }
                    guard let next = pending.first else { return }
                    let applying: [SchemaVersion]
                    if entries.isEmpty, try writer.entities().isEmpty {
                        applying = pending  // a new store: its records will be written in the newest shape
                    } else {
                        // A backend holding its rows in memory reads each entity in one page.
                        let pageSize = backend.capabilities.contains(.persistent) ? MigrationRunner.pageSize : nil
                        _ = try MigrationRunner(writer: writer, version: next, progress: progress, pageSize: pageSize).run()
                        applying = [next]
                    }
                    var changes = EntityChanges(entity: SchemaLedger.entityName)
                    for version in applying {
                        let entry = SchemaLedger.Entry(version)
                        let id = Value.integer(Int64(version.number))
                        try writer.put(SchemaLedger.entity, id: id, row: entry.row)
                        changes.inserted.append(RowChange(id: id, row: entry.row))
                    }
                    base = try writer.lastCommit()
                    let changeSet = ChangeSet(sequence: base.sequence + 1, entities: [changes],
                                              commit: CommitPosition.newIdentity(), isSchemaChange: true)
                    try writer.record(changeSet)
                    if let retention = backend.historyRetention { try keepHistory(after: changeSet.sequence, retention, writer) }
                    committed = changeSet
                    recorded = applying.map(\.number)
                }
                guard let changeSet = committed else { return }
                if !base.isSameCommit(as: hub.lastPosition) {
                    // Another process committed in between: announce its change sets first (as `write` does).
                    do {
                        try enqueueExternalChanges(through: base)
                    } catch {
                        hub.enqueue(ChangeSet(sequence: base.sequence, entities: [], isExternal: true, isComplete: false, commit: base.commit))
                    }
                }
                if hub.identity == nil {
                    hub.identity = try? backend.read { try $0.storeIdentity() }
                }
                hub.enqueue(changeSet)
                poller.noteOwnCommit()
            }
        } catch let error as ReservoirError {
            if error.code == .gone { stop(error) }
            throw named(error)
        }
        hub.deliver(through: hub.lastTicket)
        return recorded
    }
}
