import Foundation
import Reservoir

/// What running a case came to when it did not throw.
public enum ConformanceOutcome: Sendable, Equatable {
    case passed
    /// The backend lacks a capability the case needs.
    case skipped(String)
}
