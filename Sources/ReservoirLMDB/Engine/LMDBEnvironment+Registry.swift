import CLMDB
import Foundation
import Reservoir

/// One environment per directory in this process: LMDB must not open the same
/// environment twice in one process (closing the second handle would drop the first one's
/// locks), so backends on the same directory share one.
extension LMDBEnvironment {
    static let registry = Locked<[String: LMDBEnvironment]>([:])

    /// The environment at `path`, opened on first use and shared afterwards.
    /// Options of later opens do not change an environment already open in this process.
    static func acquire(path: String, options: LMDBOptions) throws -> LMDBEnvironment {
        try registry.withLock { environments in
            let key = try prepareDirectory(path, creating: !options.readOnly)
            if let existing = environments[key] {
                existing.references += 1
                return existing
            }
            let environment = try LMDBEnvironment(path: key, options: options)
            environment.references = 1
            environments[key] = environment
            return environment
        }
    }

    /// Drops one reference; the last one closes the environment. The registry stays
    /// locked until it is closed, so the directory is never open twice in this process
    /// (closing one handle would drop the other's file locks).
    func release() {
        Self.registry.withLock { environments in
            references -= 1
            guard references == 0 else { return }
            if shutDown() { environments[path] = nil }
        }
    }

    // MARK: - Opening

    /// Checks the location and creates the directory when its parent exists; returns the
    /// canonical path.
    private static func prepareDirectory(_ path: String, creating: Bool) throws -> String {
        guard !path.isEmpty else {
            throw ReservoirError(.invalidConfiguration, "lmdb: needs a location: the path of an environment directory, as in lmdb:./app.lmdb")
        }
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): is a file, not a directory; lmdb: expects an environment directory (it holds data.mdb and lock.mdb)", nativeCode: ENOTDIR, nativeMessage: LMDBErrors.message(ENOTDIR))
            }
            let contents = (try? manager.contentsOfDirectory(atPath: path)) ?? []
            let visible = contents.filter { !$0.hasPrefix(".") }
            if !visible.isEmpty && !contents.contains("data.mdb") {
                throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): is not an LMDB environment: the directory holds other files (\(visible.sorted().prefix(3).joined(separator: ", "))) and no data.mdb; give an empty or new directory")
            }
        } else if !creating {
            throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): no environment to open read-only: the directory does not exist", nativeCode: ENOENT, nativeMessage: LMDBErrors.message(ENOENT))
        } else {
            let parentPath = Self.parent(of: path)
            var parentIsDirectory: ObjCBool = false
            guard manager.fileExists(atPath: parentPath, isDirectory: &parentIsDirectory), parentIsDirectory.boolValue else {
                throw ReservoirError(.cannotOpen, "\(lmdbStore(path)): the parent directory \(parentPath) does not exist; create it first", nativeCode: ENOENT, nativeMessage: LMDBErrors.message(ENOENT))
            }
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                let code = errno
                throw LMDBErrors.error(code: code, "\(lmdbStore(path)): cannot create the environment directory")
            }
        }
        guard let resolved = realpath(path, nil) else {
            let code = errno
            throw LMDBErrors.error(code: code, "\(lmdbStore(path)): cannot resolve the path")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The directory holding `path`: what comes before its last component ("." when none).
    /// Written on the path's scalars: NSString's `deletingLastPathComponent` trapped on a
    /// path like `a//🙂` (found by the configuration fuzzer).
    static func parent(of path: String) -> String {
        var scalars = Array(path.unicodeScalars)
        while scalars.count > 1, scalars.last == "/" { scalars.removeLast() }
        guard let slash = scalars.lastIndex(of: "/") else { return "." }
        var parent = Array(scalars[..<slash])
        while parent.count > 1, parent.last == "/" { parent.removeLast() }
        if parent.isEmpty { return "/" }
        var text = ""
        text.unicodeScalars.append(contentsOf: parent)
        return text
    }
}
