/// What a backend's check of its own files found (``StorageBackend/verifyFiles()``).
public struct FileCheck: Sendable {
    /// The damage found, one sentence each; empty when none.
    public var problems: [String]
    /// Whether reading through the backend is safe despite `problems`. SQLite reports a
    /// damaged page as an error, so its files stay readable; LMDB may crash on one, so it
    /// says false when it found any.
    public var readable: Bool

    public init(problems: [String] = [], readable: Bool = true) {
        self.problems = problems
        self.readable = readable
    }
}
