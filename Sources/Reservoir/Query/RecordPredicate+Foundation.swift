import Foundation

// Foundation's `#Predicate` and `SortDescriptor` as a second way to write a request: the
// predicate's expression tree is translated into the same ``RowPredicate`` the key path
// operators build, so every backend compiles it natively (Backends.md, "Queries").

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension RecordPredicate {
    /// The records `predicate` selects, translated into the library's predicate tree when the
    /// request runs. Only a subset of `#Predicate` translates (comparisons of a stored field
    /// with a constant, `&&`, `||`, `!`, nil checks, `??` and optional chaining to a `Bool`,
    /// `contains`, `starts(with:)`, a constant collection's `contains($0.field)`, `Bool`
    /// fields, arithmetic on constants); anything else throws `.invalidQuery` naming the
    /// expression, and never filters in memory. The library's semantics apply where
    /// Foundation's differ (text compares by UTF-8 bytes; see Backends.md).
    ///
    ///     RecordPredicate(#Predicate<Message> { $0.channel == "general" && $0.score >= 2 })
    public init(_ predicate: Predicate<Root>) {
        self.init { schema in try PredicateTranslator.translate(predicate, schema: schema) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension FetchRequest {
    /// A request written with Foundation's `#Predicate` and `SortDescriptor`, which the store
    /// translates into its own predicate and sort when the request runs (see
    /// ``RecordPredicate/init(_:)`` for the subset); every request entry point takes it.
    ///
    ///     FetchRequest(#Predicate<Message> { $0.channel == "general" && $0.score >= 2 },
    ///                  sortBy: [SortDescriptor(\.sentAt, order: .reverse)], limit: 50)
    public init(_ predicate: Predicate<Root>, sortBy: [SortDescriptor<Root>] = [], limit: Int? = nil, offset: Int = 0) {
        self.init(where: RecordPredicate(predicate), sortBy: sortBy.map(SortKey.init), limit: limit, offset: offset)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension FetchRequest {
    /// A request sorted by Foundation `SortDescriptor`s on stored fields (see ``SortKey/init(_:)``).
    public init(where predicate: RecordPredicate<Root>? = nil, sortBy descriptors: [SortDescriptor<Root>], limit: Int? = nil, offset: Int = 0) {
        self.init(where: predicate, sortBy: descriptors.map(SortKey.init), limit: limit, offset: offset)
    }
}

// `SortDescriptor.keyPath` and `stringComparator`, which the translation reads, are macOS 14 API.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension SortKey {
    /// The sort key for a Foundation `SortDescriptor` on a stored field: `.forward` is
    /// ascending, `.reverse` descending, in the library's value order. A descriptor without a
    /// key path, or one comparing text with a localized or option-bearing `String` comparator,
    /// cannot run on a backend and throws `.invalidQuery` when the request runs.
    public init(_ descriptor: SortDescriptor<Root>) {
        let ascending = descriptor.order == .forward
        guard let keyPath = descriptor.keyPath else {
            self.init(keyPath: SendableKeyPath(\Root.self), ascending: ascending, problem: ReservoirError(.invalidQuery,
                "SortDescriptor<\(Root.self)> has no key path (it compares whole records with its own comparator), so it cannot sort on a backend; sort by a stored field: SortDescriptor(\\.field) or SortKey.ascending(\\.field)"))
            return
        }
        if let comparator = descriptor.stringComparator, String.StandardComparator(comparator, order: .forward) != .lexical {
            self.init(keyPath: SendableKeyPath(keyPath), ascending: ascending, problem: ReservoirError(.invalidQuery,
                "SortDescriptor(\(keyPath)) compares text with \(comparator), which no backend can run: every backend sorts text by its UTF-8 bytes (Backends.md, \"The order\"), never by locale, case or diacritic rules; write SortDescriptor(\(keyPath), comparator: .lexical) (on Linux also SortDescriptor(\(keyPath))) or SortKey.ascending(\(keyPath))"))
            return
        }
        self.init(keyPath: SendableKeyPath(keyPath), ascending: ascending)
    }
}
