import Foundation

/// Which file a path named when a backend opened it (device and inode), so the backend can
/// tell when the file at that path is no longer the one it has open: deleted (another
/// process then creates a fresh one at the same path) or replaced (a restore, a `mv`).
/// Both the SQLite and LMDB backends use it; a file-backed third-party backend can too.
///
///     let identity = try FileIdentity(path: path, store: "sqlite:\(path)")
///     …
///     try identity.check(store: "sqlite:\(path)")   // in commitToken() and when a write begins
public struct FileIdentity: Sendable, Hashable {
    /// The path the file was found at.
    public let path: String
    /// The device the file is on.
    public let device: UInt64
    /// The file's inode number on that device.
    public let inode: UInt64

    /// The identity of the file at `path` now. Throws `.cannotOpen` naming `store` when
    /// there is none.
    public init(path: String, store: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            throw ReservoirError(.cannotOpen, "\(store): cannot read \(path): \(String(cString: strerror(code)))", nativeCode: code)
        }
        self.path = path
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// Throws `.gone` naming `store` when the file at ``path`` is no longer this one. `store`
    /// is built only then: this runs at every transaction start.
    public func check(store: @autoclosure () -> String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            if code == ENOENT {
                throw ReservoirError(.gone, "\(store()): \(path) was deleted while the store had it open; other processes now use a new file there, so this store stopped (open it again)", nativeCode: code)
            }
            return  // cannot look (permissions, a transient error): nothing known to be wrong
        }
        if UInt64(status.st_dev) != device || UInt64(status.st_ino) != inode {
            throw ReservoirError(.gone, "\(store()): \(path) was replaced by another file while the store had it open, so this store stopped (open it again to use the new file)")
        }
    }
}
