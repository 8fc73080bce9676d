import Foundation
import Reservoir

/// Damaged files: copies of a real store, each damaged one way (truncated, bits flipped, a
/// page zeroed; in the data file or a lock or log file), are opened, read, written, read
/// again and verified in a child process. Each operation must work or throw a
/// `ReservoirError` naming the store; the process must not crash or hang. A crash or a
/// hang is caught because it happens in the child, counted against the mutant, and the
/// next child carries on with the next mutant.
///
/// The child is the same executable ``CrashConsistency`` uses, its main dispatching on
/// ``childArgument``:
///
///     if CommandLine.arguments.dropFirst().first == DamagedFiles.childArgument {
///         DamagedFiles.childMain(registry: myRegistry)
///     }
///     let report = try await DamagedFiles(child: try ChildProcess.builtExecutable("my-child"), registry: myRegistry)
///         .run(configuration: "mine:/tmp/x/store", mutants: 500, seed: 1)
///     #expect(report.crashes.isEmpty && report.hangs.isEmpty && report.badErrors.isEmpty)
public struct DamagedFiles: Sendable {
    public let child: URL
    public let registry: BackendRegistry

    /// The first argument that makes the child run mutants instead of crash trials.
    public static let childArgument = "--damaged-files"

    public init(child: URL, registry: BackendRegistry) {
        self.child = child
        self.registry = registry
    }

    struct Note: Storable {
        var id: Int
        var title: String
        var rank: Int
        static let schema = Schema<Note>("damage_notes", fields: [.field(\.title), .field(\.rank, indexed: true)])
    }

    /// How large a store the mutants are copies of: `notes` notes (at least 30), each title
    /// `note ID ` repeated `titleRepeats` times. The default, 290 notes of 4, makes a store of
    /// about 130 KiB; 60,000 notes of 40 about 40 MB on LMDB.
    public struct Size: Sendable, CustomStringConvertible {
        public var notes: Int
        public var titleRepeats: Int

        public init(notes: Int = 290, titleRepeats: Int = 4) {
            self.notes = max(30, notes)
            self.titleRepeats = max(1, titleRepeats)
        }

        public var description: String { "\(notes) notes of \(titleRepeats)" }
    }

    /// What the store holds before it is damaged: `size.notes` notes after ten inserting
    /// commits, one updating the first thirty and one deleting ten more.
    static func expected(_ size: Size) -> [Note] {
        (0..<size.notes).map { Note(id: $0, title: $0 < 30 ? "updated \($0)" : String(repeating: "note \($0) ", count: size.titleRepeats), rank: $0 % 10) }
    }

    /// What the mutants showed, for the note a test prints.
    public struct Report: Sendable, CustomStringConvertible {
        /// The undamaged store's files, in bytes together.
        public var storeBytes = 0
        public var mutants = 0
        /// Mutants that opened; the rest were refused with an error.
        public var opened = 0
        public var operations = 0
        public var succeeded = 0
        /// Errors by code.
        public var refused: [String: Int] = [:]
        /// Mutants whose child crashed, with the mutation and the signal.
        public var crashes: [String] = []
        /// Mutants whose child stopped making progress.
        public var hangs: [String] = []
        /// Errors that were not `ReservoirError`s or did not name the store.
        public var badErrors: [String] = []
        /// Reads that returned records other than those written, without an error: damage
        /// that only a checksum could have told, which neither SQLite nor LMDB keeps.
        public var differentValues = 0
        /// Mutants `verify()` reported damage in.
        public var verifyFoundDamage = 0

        public var description: String {
            let codes = refused.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "store of \(storeBytes) bytes: \(mutants) mutants, \(opened) opened; \(operations) operations, \(succeeded) worked, refused: \(codes.isEmpty ? "none" : codes); "
                + "verify found damage in \(verifyFoundDamage); reads with different values \(differentValues); "
                + "\(crashes.count) crashes, \(hangs.count) hangs, \(badErrors.count) bad errors"
        }
    }

    // MARK: - The parent

    /// Makes the store `configuration` names (its location must not exist yet) of `size`,
    /// then runs `mutants` damaged copies of it in child processes. A child that makes no
    /// progress for `timeout` seconds is killed and its mutant counted as a hang.
    public func run(configuration: String, mutants: Int, seed: UInt64, size: Size = Size(), timeout: Double = 30) async throws -> Report {
        try Self.makePristine(configuration, size: size, registry: registry)
        let location = try StoreConfiguration(configuration).location
        var report = Report()
        report.storeBytes = Self.files(of: location).reduce(0) { $0 + $1.size }
        var next = 0
        var round = 0
        while next < mutants {
            let results = location + ".results-\(round)"
            let errors = location + ".stderr-\(round)"
            round += 1
            let process = try ChildProcess(child, [Self.childArgument, configuration, String(seed), String(next), String(mutants - next), results,
                                                   String(size.notes), String(size.titleRepeats)],
                                           environment: ["SWIFT_BACKTRACE": "enable=no"], standardError: .file(URL(fileURLWithPath: errors)))
            var lastProgress = Date()
            var seen = 0
            var hung = false
            while process.isRunning {
                try await Task.sleep(nanoseconds: 20_000_000)
                let count = Self.lines(results).count
                if count != seen {
                    seen = count
                    lastProgress = Date()
                } else if Date().timeIntervalSince(lastProgress) > timeout {
                    hung = true
                    process.kill9()
                }
            }
            _ = await process.waitForExit(within: 5)
            let lines = Self.lines(results)
            try? FileManager.default.removeItem(atPath: results)
            // The engine's last words (an assertion, a Swift trap), else the last line.
            let said = Self.lines(errors)
            let stderrTail = said.first { $0.contains("Assertion") || $0.contains("Fatal error") || $0.contains("cannot") } ?? said.last ?? ""
            try? FileManager.default.removeItem(atPath: errors)
            var open: Int?
            for line in lines {
                let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
                guard parts.count >= 2, let index = Int(parts[0]) else { continue }
                switch parts[1] {
                case "begin":
                    open = index
                    report.mutants += 1
                case "end":
                    open = nil
                    next = index + 1
                case "opened":
                    report.opened += 1
                case "ok":
                    report.operations += 1
                    report.succeeded += 1
                case "error":
                    report.operations += 1
                    let rest = parts.count > 3 ? parts[3] : ""
                    let code = parts.count > 2 ? parts[2] : "?"
                    report.refused[code, default: 0] += 1
                    if rest.hasPrefix("unnamed ") { report.badErrors.append("mutant \(index) (\(Self.describe(index, seed: seed, location: location))): \(code) without the store's name: \(rest)") }
                case "foreign":
                    report.operations += 1
                    report.badErrors.append("mutant \(index) (\(Self.describe(index, seed: seed, location: location))): not a ReservoirError: \(parts.dropFirst(2).joined(separator: " "))")
                case "different":
                    report.differentValues += 1
                case "damaged":
                    report.verifyFoundDamage += 1
                default:
                    break
                }
            }
            if let crashed = open {
                let what = "mutant \(crashed) (\(Self.describe(crashed, seed: seed, location: location)))"
                if hung {
                    report.hangs.append(what)
                } else {
                    let how = process.terminationSignal.map { "signal \($0)" } ?? "exit status \(process.exitStatus.map(String.init) ?? "?")"
                    report.crashes.append("\(what): \(how)\(stderrTail.isEmpty ? "" : ": " + stderrTail)")
                }
                next = crashed + 1
            } else if lines.isEmpty || (process.exitStatus ?? 1) != 0 {
                throw ConformanceFailure(message: "the damaged-files child failed before its first mutant (exit \(process.exitStatus.map(String.init) ?? "?")): \(stderrTail)", file: #fileID, line: #line)
            }
        }
        Self.remove(location: location)
        return report
    }

    /// Writes the notes and ten more in ten commits, updates thirty and deletes the ten, then closes.
    static func makePristine(_ configuration: String, size: Size, registry: BackendRegistry) throws {
        let store = try Store.open(configuration, registry: registry)
        defer { store.close() }
        let total = size.notes + 10
        for batch in 0..<10 {
            try store.write { tx in
                for id in (batch * total / 10)..<((batch + 1) * total / 10) {
                    try tx.insert(Note(id: id, title: String(repeating: "note \(id) ", count: size.titleRepeats), rank: id % 10))
                }
            }
        }
        try store.write { tx in for id in 0..<30 { try tx.upsert(Note(id: id, title: "updated \(id)", rank: id % 10)) } }
        try store.write { tx in for id in size.notes..<total { _ = try tx.delete(Note.self, id: id) } }
    }

    // MARK: - Mutations

    /// The files of the store at `location`, as suffixes of it: a directory's files
    /// (`/data.mdb`), or a file and the journal files beside it (``, `-wal`).
    static func files(of location: String) -> [(suffix: String, size: Int)] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory) else { return [] }
        let suffixes: [String]
        if isDirectory.boolValue {
            suffixes = ((try? FileManager.default.contentsOfDirectory(atPath: location)) ?? []).sorted().map { "/" + $0 }
        } else {
            suffixes = ["", "-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: location + $0) }
        }
        return suffixes.compactMap { suffix in
            guard let size = (try? FileManager.default.attributesOfItem(atPath: location + suffix))?[.size] as? NSNumber else { return nil }
            return (suffix, size.intValue)
        }
    }

    enum Mutation: CustomStringConvertible {
        case truncate(String, to: Int)
        case flip(String, bits: [Int])
        case zeroPage(String, page: Int)
        /// Page `page` replaced by a copy of page `source`, or by random bytes when nil.
        case overwritePage(String, page: Int, source: Int?)

        var description: String {
            switch self {
            case let .truncate(file, size): "\(file) truncated to \(size) bytes"
            case let .flip(file, bits): "\(file) bits flipped at \(bits.prefix(4).map { "\($0 / 8).\($0 % 8)" }.joined(separator: ", "))\(bits.count > 4 ? ", …" : "")"
            case let .zeroPage(file, page): "\(file) page \(page) (4 KiB) zeroed"
            case let .overwritePage(file, page, source): "\(file) page \(page) (4 KiB) overwritten by \(source.map { "page \($0)" } ?? "random bytes")"
            }
        }
    }

    /// Mutant `index`'s damage, the same in parent and child.
    static func mutation(_ index: Int, seed: UInt64, files: [(suffix: String, size: Int)]) -> Mutation? {
        var g = SeededGenerator(seed: seed &* 0x1000_0001 &+ UInt64(index))
        let nonEmpty = files.filter { $0.size > 0 }
        guard let largest = nonEmpty.max(by: { $0.size < $1.size }) else { return nil }
        // Mostly the data file; a lock or log file one time in four.
        let file = g.next() % 4 == 0 ? nonEmpty[Int(g.next() % UInt64(nonEmpty.count))] : largest
        let pages = max(1, file.size / 4096)
        switch g.next() % 3 {
        case 0:
            let size = Int(g.next() % UInt64(file.size))
            return .truncate(file.suffix, to: g.next() % 3 == 0 ? size / 4096 * 4096 : size)
        case 1:
            // Half the time inside one page's first 64 bytes, where headers are.
            let count = 1 + Int(g.next() % 8)
            let page = Int(g.next() % UInt64(pages))
            let headers = g.next() % 2 == 0
            let bits = (0..<count).map { _ in
                headers ? (page * 4096 + Int(g.next() % 64)) * 8 + Int(g.next() % 8) : Int(g.next() % UInt64(file.size * 8))
            }
            return .flip(file.suffix, bits: bits.filter { $0 / 8 < file.size })
        default:
            let page = Int(g.next() % UInt64(pages))
            switch g.next() % 4 {
            case 0: return .overwritePage(file.suffix, page: page, source: nil)
            case 1: return .overwritePage(file.suffix, page: page, source: Int(g.next() % UInt64(pages)))
            default: return .zeroPage(file.suffix, page: page)
            }
        }
    }

    static func describe(_ index: Int, seed: UInt64, location: String) -> String {
        mutation(index, seed: seed, files: files(of: location))?.description ?? "no file to damage"
    }

    static func apply(_ mutation: Mutation, at location: String) throws {
        switch mutation {
        case let .truncate(file, size):
            guard truncate(location + file, off_t(size)) == 0 else { throw ConformanceFailure(message: "cannot truncate \(location + file)", file: #fileID, line: #line) }
        case let .flip(file, bits):
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: location + file))
            defer { try? handle.close() }
            for bit in bits {
                try handle.seek(toOffset: UInt64(bit / 8))
                guard let byte = try handle.read(upToCount: 1)?.first else { continue }
                try handle.seek(toOffset: UInt64(bit / 8))
                try handle.write(contentsOf: [byte ^ UInt8(1 << (bit % 8))])
            }
        case let .zeroPage(file, page):
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: location + file))
            defer { try? handle.close() }
            let end = try handle.seekToEnd()
            let start = UInt64(page * 4096)
            guard start < end else { return }
            try handle.seek(toOffset: start)
            try handle.write(contentsOf: Data(count: Int(min(4096, end - start))))
        case let .overwritePage(file, page, source):
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: location + file))
            defer { try? handle.close() }
            let end = try handle.seekToEnd()
            let start = UInt64(page * 4096)
            guard start < end else { return }
            let count = Int(min(4096, end - start))
            var bytes: Data
            if let source {
                try handle.seek(toOffset: UInt64(source * 4096))
                bytes = try handle.read(upToCount: count) ?? Data()
            } else {
                var g = SeededGenerator(seed: UInt64(page) &* 0x9E37_79B9 &+ 1)
                bytes = Data((0..<count).map { _ in UInt8(truncatingIfNeeded: g.next()) })
            }
            try handle.seek(toOffset: start)
            try handle.write(contentsOf: bytes)
        }
    }

    static func remove(location: String) {
        try? FileManager.default.removeItem(atPath: location)
        for suffix in ["-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: location + suffix) }
    }

    static func lines(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        // Only complete lines: the child may be killed mid-write.
        guard let last = data.lastIndex(of: 0x0A) else { return [] }
        return String(decoding: data[...last], as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
