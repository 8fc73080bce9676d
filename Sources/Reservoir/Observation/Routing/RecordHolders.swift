/// Who holds which records, so a change to a record reaches the fetches holding it even
/// when its new row (or, for a delete, its id alone) no longer matches their keys.
protocol RecordHolders {
    /// Adds to `tokens` the observer of every live fetch holding one of `ids` of `entity`.
    func formHolders(of ids: [Value], entity: String, into tokens: inout Set<UInt64>)
}
