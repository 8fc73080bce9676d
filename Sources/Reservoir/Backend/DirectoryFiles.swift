import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Several files of one directory, each checked as ``FileIdentity`` checks one (deleted or
/// replaced is `.gone`), usually with one `stat` of the directory instead of one per file.
///
/// A file can be deleted, created or renamed over only by changing its directory's entries,
/// which sets the directory's change time (and modification time). So once every file was found
/// unchanged, a directory whose identity and times are still those seen just before that check
/// holds the same files. The times are remembered only when they are far enough in the past
/// that a later change cannot carry the same ones: the kernel stamps with a coarse clock (a
/// tick, at most 10 ms), so 100 ms, and ``settledSeconds`` where the times are whole seconds
/// (file systems that keep no fraction). A directory changed more recently is checked file by
/// file. LMDB's backend checks its three
/// files (`data.mdb`, `lock.mdb`, the writer lock) at every write and probe with it.
///
///     let files = try DirectoryFiles(directory: path, names: ["data.mdb", "lock.mdb"], store: "lmdb:\(path)")
///     try files.check(store: "lmdb:\(path)")   // in commitToken() and when a write begins
///
/// Not seen (as by ``FileIdentity`` alone, one `stat` a file, would be): a file replaced
/// without changing the directory's entries, by a bind mount over it.
public final class DirectoryFiles: Sendable {
    /// The directory the files are in.
    public let directory: String
    /// The files, as found when this was made.
    public let files: [FileIdentity]
    /// `directory` as a C string, made once: converting it for every `stat` cost a write
    /// about 700 instructions.
    private let directoryCString: [CChar]
    /// The directory's identity and times when every file was last found unchanged; nil while
    /// they are too recent to trust.
    private let settled = Locked<Stamp?>(nil)

    /// How old, in seconds, the directory's times must be before they stand in for the files
    /// on a file system that keeps whole seconds.
    public static let settledSeconds = 3
    /// The same, in nanoseconds, where the times have a fraction of a second.
    public static let settledNanoseconds: Int64 = 100_000_000

    private struct Stamp: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var changed: timespec
        var modified: timespec

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            #if os(Linux)
            changed = status.st_ctim
            modified = status.st_mtim
            #else
            changed = status.st_ctimespec
            modified = status.st_mtimespec
            #endif
        }

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.device == b.device && a.inode == b.inode
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
        }
    }

    /// The identities of `names` in `directory` now. Throws `.cannotOpen` naming `store` when
    /// one is missing.
    public init(directory: String, names: [String], store: String) throws {
        self.directory = directory
        directoryCString = Array(directory.utf8CString)
        files = try names.map { try FileIdentity(path: directory + "/" + $0, store: store) }
    }

    /// Throws `.gone` naming `store` when a file is no longer the one found at first (see
    /// ``FileIdentity/check(store:)``). `store` is built only then.
    public func check(store: @autoclosure () -> String) throws {
        var status = stat()
        guard stat(directoryCString, &status) == 0 else {
            for file in files { try file.check(store: store()) }
            return
        }
        let stamp = Stamp(status)
        if settled.withLock({ $0 }) == stamp { return }
        for file in files { try file.check(store: store()) }
        var now = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_REALTIME_COARSE, &now)  // the clock the kernel stamps files with
        #else
        clock_gettime(CLOCK_REALTIME, &now)
        #endif
        let old = Self.isSettled(stamp.changed, now: now) && Self.isSettled(stamp.modified, now: now)
        settled.withLock { $0 = old ? stamp : nil }
    }

    /// Whether a change made from `now` on gets a later time than `time`.
    private static func isSettled(_ time: timespec, now: timespec) -> Bool {
        let margin = time.tv_nsec == 0 ? Int64(settledSeconds) * 1_000_000_000 : settledNanoseconds
        let age = (Int64(now.tv_sec) - Int64(time.tv_sec)) * 1_000_000_000 + (Int64(now.tv_nsec) - Int64(time.tv_nsec))
        return age >= margin
    }
}
