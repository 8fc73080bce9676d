/// The fetches holding one entry, by hub token (never 0: the hub's start at 1): nearly
/// always one, so no array is allocated for it. A multiset: a fetch that acquires an entry
/// twice (a re-fetch keeping a record) holds it until it releases it twice.
struct HolderTokens {
    /// 0 when no fetch holds the entry.
    private var first: UInt64 = 0
    private var more: [UInt64] = []

    var isEmpty: Bool { first == 0 }

    func contains(_ token: UInt64) -> Bool { first == token || more.contains(token) }

    mutating func add(_ token: UInt64) {
        if first == 0 { first = token } else { more.append(token) }
    }

    /// Removes one occurrence of `token`; returns false when no holder is left.
    mutating func remove(_ token: UInt64) -> Bool {
        if first == token {
            first = more.popLast() ?? 0
        } else if let position = more.firstIndex(of: token) {
            more.remove(at: position)
        }
        return first != 0
    }

    func forEach(_ body: (UInt64) -> Void) {
        guard first != 0 else { return }
        body(first)
        for token in more { body(token) }
    }
}
