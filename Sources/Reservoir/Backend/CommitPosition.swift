/// A place in a store's history: the sequence of a change set and the identity of the commit
/// that made it.
///
/// A sequence number alone does not name a commit. A store can lose acknowledged commits and
/// then hand their numbers out again: PostgreSQL with asynchronous commit (`durability=normal`)
/// after a server crash, SQLite with `synchronous=NORMAL` or LMDB without fsync after an
/// operating-system crash, any store restored from an older backup. Each change set therefore
/// carries a 64-bit identity made when it is committed (``newIdentity()``: unlike every other
/// the process made, and from a random seed per process) and kept in the change log with
/// it, and ``Store`` checks, before it takes a newer commit as following the last one it
/// announced, that the log still holds that one under the same identity. When it does not,
/// the history was rewound: the store announces a change set marked ``ChangeSet/isRewound``
/// and every live subscription re-reads.
///
/// Identity 0 means "not known": a change set logged before identities existed, or by a
/// backend that keeps none. Positions with an unknown identity are compared by sequence alone.
///
/// The lowest bit of a known identity says who committed (``origin``): set for this library's
/// commits (``newIdentity()``), clear for those a backend numbers itself, plain SQL written by
/// `sqlite3` or `psql` (``newIdentity(origin:)`` with `.otherClient`).
public struct CommitPosition: Sendable, Hashable, CustomStringConvertible {
    /// The change set's sequence number (0: before the first commit).
    public var sequence: UInt64
    /// The commit's identity: never 0 when known.
    public var commit: UInt64

    /// The position `sequence`, made by the commit `commit`.
    public init(sequence: UInt64, commit: UInt64) {
        self.sequence = sequence
        self.commit = commit
    }

    /// Before the first commit.
    public static let start = CommitPosition(sequence: 0, commit: 0)

    /// Who made a commit.
    public enum Origin: String, Sendable, Hashable, CustomStringConvertible {
        /// A ``Store``: this library.
        case library
        /// Another client of the engine: plain SQL through `sqlite3`, `psql` or any other program.
        case otherClient
        /// Not known: a change set logged before identities existed.
        case unknown

        /// The case's name.
        public var description: String { rawValue }
    }

    /// A fresh identity for a commit this library makes: never 0, lowest bit set, unlike every
    /// other this process made and, by a random seed, any another process made.
    public static func newIdentity() -> UInt64 {
        newIdentity(origin: .library)
    }

    /// A fresh identity for a commit made by `origin` (`.unknown` is taken as `.otherClient`):
    /// never 0, its lowest bit saying who made it.
    public static func newIdentity(origin: Origin) -> UInt64 {
        let count = identityCount.withLock { count in
            count &+= 1
            return count
        }
        // SplitMix64's finalizer: a bijection, so the identities this process makes differ from
        // each other; its seed is random per process, so they are as unlikely to meet another
        // process's as random numbers. One system call per process, where `UInt64.random` made
        // one (getrandom) per commit.
        var z = identitySeed &+ count &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return max(1, z >> 1) << 1 | (origin == .library ? 1 : 0)
    }

    /// The random start of this process's identities.
    private static let identitySeed = UInt64.random(in: .min ... .max)
    /// The identities this process has made.
    private static let identityCount = Locked<UInt64>(0)

    /// Who made the commit, as its identity's lowest bit says.
    public var origin: Origin {
        commit == 0 ? .unknown : commit & 1 == 1 ? .library : .otherClient
    }

    /// Whether both name the same commit: the same sequence, and the same identity where both
    /// are known.
    public func isSameCommit(as other: CommitPosition) -> Bool {
        sequence == other.sequence && (commit == other.commit || commit == 0 || other.commit == 0)
    }

    /// `#sequence` and the identity in hexadecimal, for messages.
    public var description: String {
        "#\(sequence)" + (commit == 0 ? "" : "/" + String(commit, radix: 16))
    }
}
