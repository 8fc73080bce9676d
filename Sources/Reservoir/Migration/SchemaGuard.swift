/// Keeps a store whose app declared its ``Migrations`` from writing, or watching, a schema it
/// does not know: when another process (or another `Store` on the location) migrates the store
/// to a version these migrations do not list and that is not additive, this store's writes are
/// refused and its subscriptions end with `.unknownSchemaVersion`, instead of writing records of
/// the old shape into the new one or decoding the new shape as the old.
///
/// A store learns of such a migration two ways: its catch-up meets a change set marked
/// ``ChangeSet/isSchemaChange`` (``Store/enqueueExternalChanges(through:)``), or a write finds,
/// inside its transaction, that others committed since the store last looked and the recorded
/// version moved (``Store/write(_:)``), and is rolled back. A store opened without migrations
/// knows no versions and is never refused.
final class SchemaGuard: Sendable {
    private struct State {
        var known: Migrations?
        var refusal: ReservoirError?
    }

    private let state = Locked(State())

    /// The error every write now throws, once the store was refused.
    var refusal: ReservoirError? { state.withLock { $0.refusal } }

    /// Remembers the app's migrations, which the store was just brought to (or found compatible with).
    func adopt(_ migrations: Migrations) {
        state.withLock { $0.known = migrations }
    }

    /// Throws (and from then on refuses every write with) `.unknownSchemaVersion` when `reader`
    /// shows the store at a version the adopted migrations do not know that is not additive.
    func check(_ reader: any ReadTransaction) throws {
        let known = state.withLock { state -> Migrations? in state.refusal == nil ? state.known : nil }
        if let refusal = self.refusal { throw refusal }
        guard let known else { return }
        do {
            try SchemaLedger.checkKnown(SchemaLedger.entries(reader), by: known)
        } catch let error as ReservoirError where error.code == .unknownSchemaVersion {
            let refusal = ReservoirError(.unknownSchemaVersion, "another process migrated the store while it was open here: " + error.message)
            state.withLock { $0.refusal = $0.refusal ?? refusal }
            throw refusal
        }
    }
}
