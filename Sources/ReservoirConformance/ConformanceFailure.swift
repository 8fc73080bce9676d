import Foundation
import Reservoir

/// A case's failure: which guarantee broke, with what was expected and what was seen.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let message: String
    public let file: String
    public let line: Int
    public var description: String { "\(message) [\(file):\(line)]" }
}
