/// How much a commit waits for so that it survives a crash. One option, `durability=`, for
/// every backend; each backend says what its levels mean for its engine (Backends.md):
/// SQLite's `synchronous`, LMDB's sync flags, PostgreSQL's `synchronous_commit`.
public enum Durability: String, Sendable, Hashable, CaseIterable {
    /// No flush on commit: a killed process loses nothing, an OS crash or power loss may
    /// lose recent commits (LMDB accepts it in configuration strings; SQLite maps it to
    /// `synchronous = OFF`, PostgreSQL to `synchronous_commit = off`).
    case none
    /// A killed process loses nothing; an OS crash or power loss may undo the last commits
    /// but never damages the store.
    case normal
    /// A commit that returned survives power loss.
    case full
}
