/// The entries of a ``SharedRecordTable`` by record id, one pointer a bucket.
///
/// A `[Value: LiveEntry]` dictionary stores each 24-byte id again beside the entry that
/// already holds it, in a table kept at most three quarters full and grown by doubling:
/// about 84 bytes a held record at 100,000 records, more than the entry itself. Here a
/// bucket is the entry's pointer, and the id is read from the entry. Open addressing with
/// linear probing, and backward-shift deletion, so no tombstones build up.
///
/// Not thread-safe: the table guards it with its lock.
struct EntryIndex {
    private var buckets: [HeldEntry?] = []
    /// How many entries are indexed.
    private(set) var count = 0

    /// The entry with `id`, if any.
    func find(_ id: Value) -> HeldEntry? {
        bucket(of: id).map { buckets[$0] } ?? nil
    }

    /// Indexes `entry`, replacing the one with its id; returns the one replaced.
    @discardableResult
    mutating func set(_ entry: HeldEntry) -> HeldEntry? {
        if (count + 1) * 4 > buckets.count * 3 { resize(to: Swift.max(16, buckets.count * 2)) }
        let mask = buckets.count - 1
        var position = entry.id.hashValue & mask
        while let existing = buckets[position] {
            if existing.id == entry.id {
                buckets[position] = entry
                return existing
            }
            position = (position + 1) & mask
        }
        buckets[position] = entry
        count += 1
        return nil
    }

    /// Removes the entry with `id`, if any.
    mutating func remove(_ id: Value) {
        guard var hole = bucket(of: id) else { return }
        buckets[hole] = nil
        count -= 1
        // Move back each following entry of the run whose home is not between the hole and
        // it, so every entry stays reachable from its home without tombstones.
        let mask = buckets.count - 1
        var next = (hole + 1) & mask
        while let entry = buckets[next] {
            let home = entry.id.hashValue & mask
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                buckets[hole] = entry
                buckets[next] = nil
                hole = next
            }
            next = (next + 1) & mask
        }
        if buckets.count > 16 && count * 8 < buckets.count { resize(to: buckets.count / 2) }
    }

    /// The bucket holding the entry with `id`.
    private func bucket(of id: Value) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let mask = buckets.count - 1
        var position = id.hashValue & mask
        while let entry = buckets[position] {
            if entry.id == id { return position }
            position = (position + 1) & mask
        }
        return nil
    }

    /// Re-indexes every entry into `size` buckets (a power of two).
    private mutating func resize(to size: Int) {
        let old = buckets
        buckets = Array(repeating: nil, count: size)
        let mask = size - 1
        for case let entry? in old {
            var position = entry.id.hashValue & mask
            while buckets[position] != nil { position = (position + 1) & mask }
            buckets[position] = entry
        }
    }
}
