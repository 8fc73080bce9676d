import Foundation

/// The types a record's `id` may have: `UUID`, `String`, `Int` (and `Int64`).
public protocol RecordID: ValueConvertible, Hashable {}
