import CLMDB
import Foundation
import Reservoir

/// Damage checks made before LMDB touches a page (Backends.md § LMDB, "Damaged files"):
/// a truncated data.mdb, and pages that would make LMDB abort or fault (``PageCheck``), all
/// of them at open.
extension LMDBEnvironment {
    /// Throws `.corrupt` when data.mdb no longer holds every page its newest meta page
    /// counts and a missing one is not free: reading a page past the end of a mapped file
    /// raises SIGBUS, which no error handling survives. Called when a transaction begins; a file truncated while a
    /// transaction is open is not caught (Backends.md § LMDB, "Damaged files").
    ///
    /// Its common case is inlined into the transaction's start, with the system call made
    /// inline too (`clmdb_file_end`): the CPU mispredicts the return of every call pending when
    /// a system call is made, and the three frames this removes took 5% to 10% off an LMDB
    /// point read (Benchmarks/NOTES.md, "The truncation check's system call").
    @inline(__always)
    func checkNotTruncated() throws {
        // The common case: the file at least as long as its pages. The page count first, the
        // file size second, as in ``truncation(env:path:sizeFD:pageSize:)``, which decides
        // every other case. (Inlining that function's own first half instead, with the rest
        // out of line, counted the same instructions but read 3% to 6% slower.)
        var info = MDB_envinfo()
        if sizeFD >= 0, let pageSize = filePageSize, pageSize > 0, mdb_env_info(env, &info) == 0 {
            let end = clmdb_file_end(sizeFD)
            if end >= 0, Int(info.me_last_pgno) < Int(end) / pageSize { return }
        }
        if let damage = Self.truncation(env: env, path: path, sizeFD: sizeFD, pageSize: filePageSize) { throw damage }
    }

    /// A data.mdb found shorter than its pages, but missing only free ones.
    struct ShortFile: Equatable {
        var lastPage: UInt64
        var size: Int64
    }

    /// Per path, the last short data.mdb found sound, so each is walked once.
    static let soundShortFiles = Locked<[String: ShortFile]>([:])

    /// `sizeFD`, when not -1, is data.mdb opened for its size alone (``sizeFD``); otherwise
    /// LMDB's own descriptor is asked with `fstat`. `pageSize`, the environment's, is asked of
    /// LMDB when not given (it never changes once the environment is open).
    static func truncation(env: OpaquePointer, path: String, sizeFD: Int32 = -1, pageSize: Int? = nil) -> ReservoirError? {
        var info = MDB_envinfo()
        // The page count first, the file size second: a commit in between only grows the
        // file (LMDB writes a commit's pages before the meta page naming them), whereas the
        // other order could see an old size beside a newer commit's pages and cry truncation.
        guard mdb_env_info(env, &info) == 0, let pageSize = pageSize ?? Self.filePageSize(env),
              let size = fileSize(env: env, sizeFD: sizeFD) else { return nil }
        let needed = (Int(info.me_last_pgno) + 1).multipliedReportingOverflow(by: pageSize)
        guard needed.overflow || size < needed.partialValue else { return nil }
        // Shorter than the pages counted: sound when only free pages are missing (LMDB's
        // loose pages, see PageCheck.missingPagesAreFree), checked once per commit and size.
        let seen = ShortFile(lastPage: UInt64(info.me_last_pgno), size: Int64(size))
        if !needed.overflow, soundShortFiles.withLock({ $0[path] == seen }) { return nil }
        if !needed.overflow, PageCheck.missingPagesAreFree(path: path) {
            soundShortFiles.withLock { $0[path] = seen }
            return nil
        }
        return ReservoirError(
            .corrupt,
            "\(lmdbStore(path)): data.mdb is damaged: it is \(size) bytes, but its pages reach \(needed.overflow ? "beyond Int.max" : "\(needed.partialValue)") bytes (the file was truncated); restore it from a copy",
            nativeCode: CLMDB_CORRUPTED, nativeMessage: LMDBErrors.message(CLMDB_CORRUPTED))
    }

    /// The environment's page size; nil when LMDB does not answer.
    static func filePageSize(_ env: OpaquePointer) -> Int? {
        var pages = MDB_stat()
        return mdb_env_stat(env, &pages) == 0 ? Int(pages.ms_psize) : nil
    }

    /// data.mdb's size in bytes: `lseek(SEEK_END)` on `sizeFD`, or `fstat` on LMDB's
    /// descriptor when `sizeFD` is -1; nil when neither answers.
    private static func fileSize(env: OpaquePointer, sizeFD: Int32) -> Int? {
        if sizeFD >= 0 {
            let end = clmdb_file_end(sizeFD)
            return end >= 0 ? Int(end) : nil
        }
        var fd: Int32 = -1
        var status = stat()
        guard mdb_env_get_fd(env, &fd) == 0, fstat(fd, &status) == 0 else { return nil }
        return Int(status.st_size)
    }

    /// The first problems ``PageCheck`` finds in the newest snapshot, as a `.corrupt` error;
    /// nil when none. Opening checks every page, whatever the size: a damaged page LMDB
    /// follows later aborts or faults the process, and the walk costs about 0.5 ms a MB
    /// with the file in the page cache, 3 ms from disk (Backends.md § LMDB, "Damaged files").
    static func pageDamage(env: OpaquePointer, path: String) -> ReservoirError? {
        let problems = pageProblems(env: env, path: path)
        guard let first = problems.first else { return nil }
        let more = problems.count > 1 ? " (and \(problems.count - 1) more)" : ""
        return ReservoirError(
            .corrupt, "\(lmdbStore(path)): data.mdb is damaged: \(first)\(more); restore it from a copy (LMDB would crash following the damaged page, so the store is not opened, nor can reservoir copy read it)",
            nativeCode: CLMDB_CORRUPTED, nativeMessage: LMDBErrors.message(CLMDB_CORRUPTED))
    }

    /// ``PageCheck``'s findings on the snapshot of a read transaction held meanwhile, so no
    /// writer reuses the pages walked. Empty when the transaction cannot begin (the caller's
    /// next call reports why).
    static func pageProblems(env: OpaquePointer, path: String) -> [String] {
        var txn: OpaquePointer?
        guard mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn) == 0, let txn else { return [] }
        defer { mdb_txn_abort(txn) }
        return PageCheck.run(path: path, transactionID: UInt64(mdb_txn_id(txn)))
    }

    /// Every page of every database checked (``PageCheck``), for `verify`.
    func pageProblems() throws -> [String] {
        try enter()
        defer { exit() }
        return Self.pageProblems(env: env, path: path)
    }
}
