/// A bug `PlantedBackend` can be told to have (`planted:PATH?bug=NAME`), to prove that
/// certification catches it. The first ten are the table in issue #38, planted by the
/// author of a third-party backend; the rest break further points of the contract.
public enum PlantedBug: String, CaseIterable, Sendable, CustomStringConvertible {
    // Caught by the conformance cases before #38.
    /// The file always says sequence 0.
    case lastSequenceNotSaved
    /// `fetch(_:expecting:each:)` announces one row more than it delivers.
    case wrongRowCountAnnounced
    /// A write whose body throws keeps what it wrote (in memory).
    case rollbackLeaksWrites
    /// `insert(_:id:row:)` replaces an existing row and reports success.
    case insertOverwrites
    /// Queries return every matching row, whatever their limit and offset.
    case limitAndOffsetIgnored

    // Caught before #38 by the differential test only.
    /// A real -0.0 is written to the file as 0.0.
    case negativeZeroSavedAsZero
    /// Text is written to the file in Unicode normalisation form C.
    case textNormalisedOnSave

    // Caught by nothing before #38.
    /// `put` keeps the description an entity was first written with.
    case staleEntityDescription
    /// The change log is kept in memory only; a reopened store's log is empty.
    case changeLogNotPersisted
    /// A transaction keeps working after its closure returned.
    case transactionUsableAfterClosure

    // Further points of the contract.
    /// `read`, `write` and `commitToken()` keep working after `close()`.
    case callsAfterCloseAccepted
    /// A second opener of an open location is let in (two writers rewriting one file).
    case secondOpenerAccepted
    /// `close()` keeps the location claimed, so the next opener is refused with `.busy`.
    case closeKeepsLocation
    /// The file's identity is never checked: replaced files go unnoticed.
    case replacedFilesUnnoticed
    /// The identity is taken once at opening, so the file each commit renames in looks replaced.
    case identityNotRetakenAfterCommit

    public var description: String { rawValue }
}
