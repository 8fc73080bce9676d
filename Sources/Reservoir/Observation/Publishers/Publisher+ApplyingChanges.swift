import OpenCombineShim

extension Publisher {
    /// Keeps a parallel collection (view models, rows) in step with a stream of
    /// `CollectionDifference`s: starting from `initial`, applies each difference and
    /// publishes the result. Only inserted elements go through `transform`; kept elements
    /// are kept as they are.
    ///
    ///     store.differencesPublisher(for: request).applyingChanges([TodoViewModel]()) { TodoViewModel($0) }
    public func applyingChanges<Element, C: RangeReplaceableCollection>(
        _ initial: C, _ transform: @escaping (Element) -> C.Element
    ) -> Publishers.Scan<Self, C> where Output == CollectionDifference<Element>, C.Index == Int {
        scan(initial) { collection, difference in collection.applyingChanges(difference, transform) }
    }
}

extension RangeReplaceableCollection where Index == Int {
    /// This collection with `difference` applied: removals at their offsets, then insertions
    /// of transformed elements at theirs.
    public func applyingChanges<Element>(_ difference: CollectionDifference<Element>, _ transform: (Element) -> Self.Element) -> Self {
        var result = self
        for case let .remove(offset, _, _) in difference.removals.reversed() {
            result.remove(at: result.index(result.startIndex, offsetBy: offset))
        }
        for case let .insert(offset, element, _) in difference.insertions {
            result.insert(transform(element), at: result.index(result.startIndex, offsetBy: offset))
        }
        return result
    }
}
