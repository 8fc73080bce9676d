/// How a record changed.
public enum ChangeType: String, Sendable, Hashable, CaseIterable, Codable {
    /// The record did not exist before the transaction.
    case inserted
    /// The record existed before and after, with a different row.
    case updated
    /// The record existed before the transaction and not after.
    case deleted
}
