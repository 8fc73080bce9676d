/// A ``SharedRecordTable`` whatever its record type, as the hub's routing sees it.
protocol HeldRecordTable: AnyObject, Sendable {
    /// Adds to `tokens` the holders of every version of each of `ids`.
    func formHolders(of ids: [Value], into tokens: inout Set<UInt64>)
}
