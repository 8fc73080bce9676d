import CLibPQ

/// What the benchmarks share: their error, and raw libpq's connection as each raw side opens it.
public struct BenchError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The raw libpq sides' connection.
public enum RawLibPQ {
    /// A connection to `url`, its notices silenced; throws what libpq said when it cannot connect.
    public static func connect(_ url: String) throws -> OpaquePointer {
        guard let connection = PQconnectdb(url) else { throw BenchError("raw libpq: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection))
            PQfinish(connection)
            throw BenchError("raw libpq: cannot connect: \(message)")
        }
        reservoir_pq_silence(connection)
        return connection
    }
}
