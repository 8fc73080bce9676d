import Foundation

/// A fresh directory under the system's temporary directory for one test, removed by
/// `cleanUp()` (call it in a `defer`).
public struct TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates `<temporary directory>/<prefix>-<UUID>`; the prefix names the test kind, so
    /// that a directory left behind by a crash says where it came from.
    public init(_ prefix: String = "reservoir-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The directory's file-system path.
    public var path: String { url.path }

    /// The path of `name` inside the directory (which need not exist).
    public func file(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Removes the directory and everything in it; a directory already gone is fine.
    public func cleanUp() {
        try? FileManager.default.removeItem(at: url)
    }
}
