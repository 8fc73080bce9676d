import Foundation
import Reservoir

/// A discrepancy found by ``DifferentialTest``: what differed at which step, the seed, and
/// the shrunk sequence as a test to paste.
public struct DifferentialFailure: Error, CustomStringConvertible {
    /// The position of the failing step in the sequence run.
    public let stepIndex: Int
    public let message: String
    public let steps: [DifferentialStep]
    public internal(set) var seed: UInt64?
    public internal(set) var generatedCount = 0
    public internal(set) var shrunk: [DifferentialStep] = []
    public internal(set) var shrinkRuns = 0

    init(stepIndex: Int, message: String, steps: [DifferentialStep]) {
        self.stepIndex = stepIndex
        self.message = message
        self.steps = steps
    }

    public var description: String {
        var text = "Differential test failed"
        if let seed { text += " (seed \(seed), replay with RESERVOIR_FUZZ_SEED=\(seed))" }
        text += " at step \(stepIndex + 1)"
        if generatedCount > 0 { text += " of \(generatedCount)" }
        text += ": \(steps.indices.contains(stepIndex) ? steps[stepIndex].description : "before the first step")\n  \(message)\n"
        if !shrunk.isEmpty {
            text += "Shrunk to \(shrunk.count) step\(shrunk.count == 1 ? "" : "s") in \(shrinkRuns) runs; as a test (with `backends` the ones this run used):\n\n"
            text += "@Test func differentialRegression() throws {\n    try DifferentialTest(backends: backends).replay([\n"
            text += shrunk.map { "        \($0)," }.joined(separator: "\n")
            text += "\n    ])\n}\n"
        }
        return text
    }
}
