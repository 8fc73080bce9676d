/// One section of a fetch's results: the records sharing one value of the section key.
public struct ResultsSection<Key: Sendable, Record: Sendable>: Sendable {
    /// The section key's value, shared by every record in the section.
    public let key: Key
    /// The section's records, in the request's order.
    public let records: [Record]

    /// A section; for building expected values in tests.
    public init(key: Key, records: [Record]) {
        self.key = key
        self.records = records
    }
}

extension ResultsSection: Equatable where Key: Equatable, Record: Equatable {}
