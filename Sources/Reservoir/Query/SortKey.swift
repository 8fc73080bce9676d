/// One sort term of a fetch request: a field and a direction.
///
///     sortBy: [.descending(\Todo.priority), .ascending(\.title)]
///
/// Values sort in the contract's order (null first when ascending). Every fetch
/// ends with the record id ascending, so the order is total and the same on every
/// backend. Named `SortKey` so it never clashes with Foundation's `SortDescriptor`.
public struct SortKey<Root: Storable>: Sendable {
    let keyPath: SendableKeyPath
    /// Whether smaller values come first.
    public let ascending: Bool
    /// Why this key cannot sort, thrown when the request runs (a refused ``SortDescriptor``).
    var problem: ReservoirError? = nil

    /// Smallest first (null first).
    public static func ascending<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>) -> SortKey {
        SortKey(keyPath: SendableKeyPath(keyPath), ascending: true)
    }

    /// Largest first (null last).
    public static func descending<V: ValueConvertible>(_ keyPath: KeyPath<Root, V>) -> SortKey {
        SortKey(keyPath: SendableKeyPath(keyPath), ascending: false)
    }

    @usableFromInline
    func term(in schema: Schema<Root>) throws -> SortTerm {
        if let problem { throw problem }
        return SortTerm(column: try schema.column(for: keyPath.path), ascending: ascending)
    }
}

