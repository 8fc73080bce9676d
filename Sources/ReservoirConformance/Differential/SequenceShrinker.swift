/// Delta debugging over a failing sequence of steps, shared by the generated tests
/// (``DifferentialTest``, ``SyncConvergenceTest``).
enum SequenceShrinker {
    /// Removes chunks of `failing` (halves, then quarters, … single steps) while what is left
    /// still fails, each time keeping the candidate up to the step it now fails at.
    /// `failureIndex` runs a candidate and returns the index of its failing step, or nil when it
    /// passes. At most `maxRuns` runs in all, counted in `runs`.
    static func removingChunks<Step>(_ failing: [Step], runs: inout Int, maxRuns: Int, failureIndex: ([Step]) -> Int?) -> [Step] {
        var current = failing
        var chunk = max(1, current.count / 2)
        while chunk >= 1 && runs < maxRuns {
            var start = 0
            var removed = false
            while start < current.count && runs < maxRuns {
                var candidate = current
                candidate.removeSubrange(start..<min(current.count, start + chunk))
                var failsAt: Int?
                if !candidate.isEmpty {
                    runs += 1
                    failsAt = failureIndex(candidate)
                }
                if let index = failsAt {
                    current = Array(candidate.prefix(index + 1))
                    removed = true
                } else {
                    start += chunk
                }
            }
            if !removed { chunk /= 2 }
        }
        return current
    }
}
