import CLMDB
import Foundation
import Reservoir

/// data.mdb's B-trees checked page by page, read with `pread`, never through LMDB's map.
///
/// LMDB trusts every page it maps: a zeroed or overwritten page makes it fail an assertion
/// (`IS_LEAF(mp)` in `mdb_cursor_next`) or follow a garbage offset into a fault, which no
/// error handling survives. This walk reads the same pages as plain bytes and checks what
/// LMDB would rely on: each page's number and exact flags (a stray `P_DIRTY` makes a writer
/// modify the read-only map in place), the bounds of its node offsets, keys and data, keys
/// in order and at most 511 bytes, branch pages with the two children `mdb_page_search_root`
/// asserts, child and overflow page numbers inside the file, the depth of every leaf, every
/// page reached once, the free-page lists (keyed by a past transaction, sorted, inside the
/// file, naming no page a tree uses: `mdb_page_touch` asserts a page it allocates is not the
/// one it copies), and the counts in each database's record. The layout is LMDB 0.9's
/// on-disk format (64-bit, little-endian; `mdb.c`'s `MDB_page`, `MDB_node`, `MDB_db`,
/// `MDB_meta`).
///
/// It runs inside a read transaction, whose snapshot pins the pages it walks: a writer in
/// another process cannot reuse them meanwhile.
struct PageCheck {
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let headerSize = 16
    private static let nodeHeaderSize = 8
    private static let dbRecordSize = 48
    /// LMDB's compile-time `MDB_MAXKEYSIZE`: no valid page holds a longer key.
    private static let maxKeySize = 511
    private static let invalidPage = UInt64.max
    // Page flags.
    private static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, overflow: UInt16 = 0x04, meta: UInt16 = 0x08
    // Node flags.
    private static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02, dupData: UInt16 = 0x04

    /// A database's record (`MDB_db`) as stored in a meta page or the main database.
    struct Record {
        var flags: UInt16, depth: UInt16
        var branchPages: UInt64, leafPages: UInt64, overflowPages: UInt64, entries: UInt64, root: UInt64

        init(_ bytes: ArraySlice<UInt8>) {
            let b = Array(bytes)
            flags = PageCheck.u16(b, 4)
            depth = PageCheck.u16(b, 6)
            branchPages = PageCheck.u64(b, 8)
            leafPages = PageCheck.u64(b, 16)
            overflowPages = PageCheck.u64(b, 24)
            entries = PageCheck.u64(b, 32)
            root = PageCheck.u64(b, 40)
        }
    }

    private let fd: Int32
    private let pageSize: Int
    private let lastPage: UInt64
    private let transactionID: UInt64
    private var visited: [UInt64]
    /// Pages the free-page lists name; none may be part of a tree.
    private var freed: [UInt64]
    private(set) var problems: [String] = []
    /// Pages read, for the verify report.
    private(set) var pagesRead = 0
    // Counts of the database being walked, compared with its record at the end.
    private var counted = (branch: UInt64(0), leaf: UInt64(0), overflow: UInt64(0), entries: UInt64(0))

    /// Checks the environment at `path` as of the snapshot `transactionID` (a read
    /// transaction the caller holds open), every page of every database. Returns the problems
    /// found, one sentence each; none when the file is sound, or when the snapshot's meta page
    /// was already overwritten by later commits (nothing is then known to be wrong).
    static func run(path: String, transactionID: UInt64) -> [String] {
        let fd = open(path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }  // LMDB has it open; a failure here is not damage
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return [] }
        let fileSize = UInt64(status.st_size)
        // The walk reads nearly every page in tree order: ask for the whole file at once, so
        // a file not in the page cache is read ahead in large runs instead of page by page.
        #if os(Linux)
        _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_WILLNEED))
        #endif
        guard let first = read(fd, at: 0, count: 4096), first.count >= headerSize + 136 else {
            return ["data.mdb is shorter than its first meta page"]
        }
        let pageSize = Int(u32(first, headerSize + 24))  // mm_psize: the free database record's md_pad, at 24
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else {
            return ["meta page 0 gives an impossible page size (\(pageSize))"]
        }
        var metas: [(txnid: UInt64, lastPage: UInt64, free: Record, main: Record)] = []
        for index in 0..<2 {
            guard let page = read(fd, at: UInt64(index * pageSize), count: pageSize) else {
                return ["meta page \(index) cannot be read"]
            }
            guard page.count >= headerSize + 136, u16(page, 10) & meta != 0, u32(page, headerSize) == magic else {
                return ["meta page \(index) is damaged (not an LMDB meta page)"]
            }
            let body = headerSize
            // MDB_meta: magic, version, address, map size, the free and main records, last page, txnid.
            metas.append((u64(page, body + 128), u64(page, body + 120),
                          Record(page[(body + 24)..<(body + 72)]), Record(page[(body + 72)..<(body + 120)])))
        }
        guard let chosen = metas.first(where: { $0.txnid == transactionID }) else { return [] }
        let needed = (chosen.lastPage &+ 1).multipliedReportingOverflow(by: UInt64(pageSize))
        if chosen.lastPage >= UInt64(Int32.max) || needed.overflow {
            return ["data.mdb's meta page counts \(chosen.lastPage) pages, more than any file holds (the meta page is damaged)"]
        }
        var check = PageCheck(fd: fd, pageSize: pageSize, lastPage: chosen.lastPage, transactionID: transactionID)
        check.walk(chosen.free, name: "the free-page list", isFree: true)
        check.walk(chosen.main, name: "the main database", isMain: true)
        if check.problems.isEmpty, needed.partialValue > fileSize, let missing = check.firstMissingPageInUse(fileSize: fileSize) {
            check.report("data.mdb is \(fileSize) bytes, but its pages reach page \(chosen.lastPage) and page \(missing) is not free (the file was truncated, or the meta page is damaged)")
        }
        return check.problems
    }

    /// Whether every page the newest meta page counts but data.mdb is too short to hold is on
    /// the free-page list. LMDB leaves such a file behind legitimately: a page a transaction
    /// allocated at the end of the file and freed again before committing (a "loose" page) is
    /// listed as free but never written, so the file can end before the last page counted.
    /// LMDB never reads a free page (it allocates fresh memory for a page it reuses), so such a
    /// file is sound; one that lacks a page a tree uses was truncated. Reads only the meta
    /// pages and the free-page list's pages, with `pread`; false when they cannot be read.
    /// The caller holds a read transaction, so the newest snapshot's pages are not reused meanwhile.
    static func missingPagesAreFree(path: String) -> Bool {
        let fd = open(path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard let first = read(fd, at: 0, count: 4096), first.count >= headerSize + 136 else { return false }
        let pageSize = Int(u32(first, headerSize + 24))
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else { return false }
        var newest: (txnid: UInt64, lastPage: UInt64, free: Record)?
        for index in 0..<2 {
            guard let page = read(fd, at: UInt64(index * pageSize), count: pageSize), page.count >= headerSize + 136,
                  u16(page, 10) & meta != 0, u32(page, headerSize) == magic else { return false }
            let txnid = u64(page, headerSize + 128)
            if txnid >= newest?.txnid ?? 0 {
                newest = (txnid, u64(page, headerSize + 120), Record(page[(headerSize + 24)..<(headerSize + 72)]))
            }
        }
        var status = stat()
        guard let chosen = newest, chosen.lastPage < UInt64(Int32.max), fstat(fd, &status) == 0 else { return false }
        var check = PageCheck(fd: fd, pageSize: pageSize, lastPage: chosen.lastPage, transactionID: chosen.txnid)
        check.walk(chosen.free, name: "the free-page list", isFree: true)
        return check.problems.isEmpty && check.firstMissingPageInUse(fileSize: UInt64(status.st_size)) == nil
    }

    /// The first page past the end of a `fileSize`-byte file that the free-page lists walked
    /// so far do not name; nil when every such page is free.
    private func firstMissingPageInUse(fileSize: UInt64) -> UInt64? {
        let firstMissing = fileSize / UInt64(pageSize)
        guard firstMissing <= lastPage else { return nil }
        return (firstMissing...lastPage).first { freed[Int($0 / 64)] & (UInt64(1) << ($0 % 64)) == 0 }
    }

    /// The page size the meta pages give, checked before `mdb_env_open` reads them: LMDB
    /// takes it unchecked from the newest one and reads the second meta page at the first
    /// one's size, so 0 divides by zero (SIGFPE) and another wrong value misplaces every page.
    /// Nil when both agree on a power of two from 512 to 65,536, and when data.mdb is missing
    /// or its meta pages are not LMDB's (`mdb_env_open` itself refuses those).
    static func metaPageSizeProblem(path: String) -> String? {
        let fd = open(path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var sizes: [Int] = []
        for index in 0..<2 {
            let offset = UInt64(sizes.first ?? 0)
            guard let page = read(fd, at: offset, count: headerSize + 136), page.count == headerSize + 136,
                  u16(page, 10) & meta != 0, u32(page, headerSize) == magic else { return nil }
            let size = Int(u32(page, headerSize + 24))
            guard size >= 512, size <= 65_536, size & (size - 1) == 0 else {
                return "meta page \(index) gives an impossible page size (\(size))"
            }
            if let first = sizes.first, first != size {
                return "the meta pages give different page sizes (\(first) and \(size))"
            }
            sizes.append(size)
        }
        return nil
    }

    private init(fd: Int32, pageSize: Int, lastPage: UInt64, transactionID: UInt64) {
        self.fd = fd
        self.pageSize = pageSize
        self.lastPage = lastPage
        self.transactionID = transactionID
        visited = Array(repeating: 0, count: Int(lastPage / 64) + 1)
        freed = visited
    }

    // MARK: - Walking

    private mutating func report(_ problem: String) {
        if problems.count < 20 { problems.append(problem) }
    }

    /// Walks the tree `record` describes, then compares its counts with the record.
    private mutating func walk(_ record: Record, name: String, isFree: Bool = false, isMain: Bool = false) {
        if record.root == Self.invalidPage {
            if record.entries != 0 || record.depth != 0 {
                report("\(name) has no root page but counts \(record.entries) entries")
            }
            return
        }
        guard record.depth >= 1, record.depth <= 32 else {
            report("\(name): impossible depth \(record.depth)")
            return
        }
        // The free-page database is MDB_INTEGERKEY and nothing else LMDB keeps per database
        // (a MDB_DUPSORT bit makes mdb_cursor_init assert); every other one has no flags.
        if record.flags & ~UInt16(0x7F) != 0 || (!isFree && record.flags != 0) || (isFree && record.flags & 0x7E != 0x08) {
            report("\(name): unexpected database flags \(record.flags)")
            return
        }
        let saved = counted
        counted = (0, 0, 0, 0)
        visit(record.root, levels: Int(record.depth), name: name, isFree: isFree, isMain: isMain)
        if problems.isEmpty {
            let found = counted
            if found.entries != record.entries || found.branch != record.branchPages || found.leaf != record.leafPages
                || found.overflow != record.overflowPages {
                report("\(name): its record counts \(record.entries) entries in \(record.branchPages)/\(record.leafPages)/\(record.overflowPages) branch/leaf/overflow pages, the pages hold \(found.entries) in \(found.branch)/\(found.leaf)/\(found.overflow)")
            }
        }
        counted = saved
    }

    private mutating func visit(_ pgno: UInt64, levels: Int, name: String, isFree: Bool, isMain: Bool) {
        guard problems.isEmpty else { return }
        guard let page = claim(pgno, name: name) else { return }
        // Exactly P_BRANCH or P_LEAF: LMDB clears P_DIRTY before writing a page, and takes a
        // page marked dirty for its own copy, writing into the read-only map (SIGSEGV).
        let flags = Self.u16(page, 10)
        let isLeaf = flags == Self.leaf
        guard flags == Self.branch || isLeaf else {
            return report("\(name): page \(pgno) is neither a branch nor a leaf page (flags \(flags))")
        }
        guard isLeaf == (levels == 1) else {
            return report("\(name): page \(pgno) is a \(isLeaf ? "leaf" : "branch") page where the tree's depth puts a \(levels == 1 ? "leaf" : "branch")")
        }
        let lower = Int(Self.u16(page, 12)), upper = Int(Self.u16(page, 14))
        guard lower >= Self.headerSize, lower % 2 == 0, lower <= upper, upper <= pageSize else {
            return report("\(name): page \(pgno) has impossible free-space bounds (\(lower), \(upper))")
        }
        let count = (lower - Self.headerSize) / 2
        // mdb_page_search_root asserts two children outside the free-page database.
        if !isLeaf && count < (isFree ? 1 : 2) { return report("\(name): branch page \(pgno) has \(count) children") }
        if isLeaf { counted.leaf += 1; counted.entries += UInt64(count) } else { counted.branch += 1 }
        var previousKey: ArraySlice<UInt8>?
        for index in 0..<count {
            let offset = Int(Self.u16(page, Self.headerSize + 2 * index))
            guard offset >= upper, offset + Self.nodeHeaderSize <= pageSize, offset % 2 == 0 else {
                return report("\(name): page \(pgno) node \(index) lies outside the page (offset \(offset))")
            }
            let lo = UInt64(Self.u16(page, offset)), hi = UInt64(Self.u16(page, offset + 2))
            let nodeFlags = Self.u16(page, offset + 4)
            let keySize = Int(Self.u16(page, offset + 6))
            let keyStart = offset + Self.nodeHeaderSize
            guard keyStart + keySize <= pageSize, keySize <= Self.maxKeySize else {
                return report("\(name): page \(pgno) node \(index) has a key of \(keySize) bytes running past the page or over LMDB's 511")
            }
            let key = page[keyStart..<(keyStart + keySize)]
            if isLeaf || index > 0 {
                if let previousKey, !Self.inOrder(previousKey, key, integer: isFree) {
                    return report("\(name): page \(pgno) keys out of order at node \(index)")
                }
                previousKey = key
            }
            if isFree, isLeaf {
                // The free-page database is keyed by the transaction that freed the pages.
                let freedBy = keySize == 8 ? Self.u64(page, keyStart) : 0
                guard freedBy >= 1, freedBy <= transactionID else {
                    return report("\(name): page \(pgno) node \(index) is not keyed by a past transaction")
                }
            }
            if !isLeaf {
                let child = lo | hi << 16 | UInt64(nodeFlags) << 32
                visit(child, levels: levels - 1, name: name, isFree: isFree, isMain: isMain)
                guard problems.isEmpty else { return }
                continue
            }
            let dataStart = keyStart + keySize
            let dataSize = Int(lo | hi << 16)
            if nodeFlags & Self.bigData != 0 {
                guard dataStart + 8 <= pageSize else { return report("\(name): page \(pgno) node \(index) is cut off") }
                guard nodeFlags == Self.bigData else { return report("\(name): page \(pgno) node \(index) has flags \(nodeFlags)") }
                guard let content = overflowRun(Self.u64(page, dataStart), size: dataSize, name: name, read: isFree) else { return }
                if isFree { checkFreeList(content, name: name, at: pgno) }
                continue
            }
            guard dataStart + dataSize <= pageSize else {
                return report("\(name): page \(pgno) node \(index) has data running past the page")
            }
            let data = page[dataStart..<(dataStart + dataSize)]
            if nodeFlags & Self.subData != 0 {
                guard isMain, nodeFlags == Self.subData, dataSize == Self.dbRecordSize else {
                    return report("\(name): page \(pgno) node \(index) holds a database record where none belongs")
                }
                let database = "database \"\(String(decoding: key, as: UTF8.self))\""
                walk(Record(data), name: database)
            } else if nodeFlags & Self.dupData != 0 || nodeFlags != 0 {
                return report("\(name): page \(pgno) node \(index) has unexpected flags \(nodeFlags)")
            } else if isFree {
                checkFreeList(Array(data), name: name, at: pgno)
            }
        }
    }

    /// Reads page `pgno` after checking it lies inside the snapshot and was not reached before.
    private mutating func claim(_ pgno: UInt64, name: String) -> [UInt8]? {
        guard pgno >= 2, pgno <= lastPage else {
            report("\(name): refers to page \(pgno), outside the file's pages 2...\(lastPage)")
            return nil
        }
        let word = Int(pgno / 64), bit = UInt64(1) << (pgno % 64)
        guard visited[word] & bit == 0 else {
            report("\(name): page \(pgno) is reached twice")
            return nil
        }
        guard freed[word] & bit == 0 else {
            report("\(name): page \(pgno) is in use but listed as free")
            return nil
        }
        visited[word] |= bit
        guard let page = Self.read(fd, at: pgno * UInt64(pageSize), count: pageSize), page.count == pageSize else {
            report("\(name): page \(pgno) cannot be read")
            return nil
        }
        pagesRead += 1
        guard Self.u64(page, 0) == pgno else {
            report("\(name): page \(pgno) is damaged (it calls itself page \(Self.u64(page, 0)))")
            return nil
        }
        return page
    }

    /// Checks a run of overflow pages holding `size` bytes; returns the bytes when `read`.
    private mutating func overflowRun(_ pgno: UInt64, size: Int, name: String, read: Bool) -> [UInt8]? {
        guard let page = claim(pgno, name: name) else { return nil }
        let pages = UInt64(Self.u32(page, 12))
        let expected = UInt64((Self.headerSize + size + pageSize - 1) / pageSize)
        guard Self.u16(page, 10) == Self.overflow, pages == expected, pgno + pages - 1 <= lastPage else {
            report("\(name): overflow page \(pgno) is damaged (\(pages) pages for \(size) bytes)")
            return nil
        }
        for extra in 1..<max(1, Int(pages)) {
            let next = pgno + UInt64(extra)
            let word = Int(next / 64), bit = UInt64(1) << (next % 64)
            if visited[word] & bit != 0 || freed[word] & bit != 0 {
                report("\(name): page \(next) is reached twice, or in use but listed as free")
                return nil
            }
            visited[word] |= bit
        }
        counted.overflow += pages
        guard read else { return [] }
        return Self.read(fd, at: pgno * UInt64(pageSize) + UInt64(Self.headerSize), count: size)
    }

    /// A free-page list: a count, then that many page numbers inside the file, in descending
    /// order (LMDB merges lists assuming it), each listed once in all lists. The free-page
    /// database is walked before the others, so ``claim(_:name:)`` finds a listed page in use.
    private mutating func checkFreeList(_ bytes: [UInt8], name: String, at pgno: UInt64) {
        guard bytes.count >= 8, bytes.count % 8 == 0, Self.u64(bytes, 0) == UInt64(bytes.count / 8 - 1) else {
            return report("\(name): a list on page \(pgno) is damaged")
        }
        var previous = UInt64.max
        for index in 1..<(bytes.count / 8) {
            let listed = Self.u64(bytes, index * 8)
            guard listed >= 2, listed <= lastPage else {
                return report("\(name): a list on page \(pgno) names page \(listed), outside the file")
            }
            let word = Int(listed / 64), bit = UInt64(1) << (listed % 64)
            guard listed < previous, freed[word] & bit == 0, visited[word] & bit == 0 else {
                return report("\(name): a list on page \(pgno) names page \(listed) out of order, twice, or in use")
            }
            freed[word] |= bit
            previous = listed
        }
    }

    // MARK: - Bytes

    private static func inOrder(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>, integer: Bool) -> Bool {
        if integer, a.count == 8, b.count == 8 { return u64(Array(a), 0) < u64(Array(b), 0) }
        return a.lexicographicallyPrecedes(b)
    }

    private static func read(_ fd: Int32, at offset: UInt64, count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard got >= 0 else { return nil }
        if got < count { buffer.removeLast(count - got) }
        return buffer
    }

    // Little-endian fields; 0 past the end (a short read), which every caller then refuses.
    static func u16(_ b: [UInt8], _ at: Int) -> UInt16 {
        guard at >= 0, at + 2 <= b.count else { return 0 }
        return UInt16(littleEndian: b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) })
    }

    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
        guard at >= 0, at + 4 <= b.count else { return 0 }
        return UInt32(littleEndian: b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) })
    }

    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 {
        guard at >= 0, at + 8 <= b.count else { return 0 }
        return UInt64(littleEndian: b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) })
    }
}
