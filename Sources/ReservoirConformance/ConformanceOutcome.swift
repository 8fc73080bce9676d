import Foundation
import Reservoir

/// What running a case came to when it did not throw.
public enum ConformanceOutcome: Sendable, Equatable {
    case passed
    /// The case does not apply: the backend lacks a capability the case needs (or has one
    /// that rules it out), or its location is not a file the case can replace.
    case skipped(String)
}

/// Thrown by a case body that finds it cannot apply to the backend (say, a location that is
/// not a path in the file system); ``ConformanceCase/run(using:)`` reports it as skipped.
struct ConformanceSkip: Error {
    let reason: String
}
