import Foundation
import ReservoirConformance
import Testing

/// A store whose files another user owns and this one may only read (the issue: a root-owned
/// 0644 file opened by another user could not be opened at all) opens read-only by itself:
/// `list` works, `add` fails with one line saying why. Run as `nobody` through `runuser`,
/// which needs root; elsewhere the test says so and records nothing as passed.
@Suite("reservoir on files it may only read")
struct ReadOnlyTests {
    @Test(arguments: ["sqlite:./t.sqlite", "lmdb:./t.lmdb"])
    func anotherUsersStoreOpensReadOnly(store: String) async throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else {
            withKnownIssue { Issue.record("skipped: needs root and runuser to act as another user") }
            return
        }
        let scratch = try TemporaryDirectory("reservoir-cli")
        defer { scratch.cleanUp() }
        let added = try await CLIProcess.run(["todo", "add", "written by its owner", "--store", store], in: scratch.url)
        try #require(added.status == 0, "\(added.errors)")
        // Only the owner may write: files 0444, directories 0555 (no -shm can be made).
        for entry in try FileManager.default.subpathsOfDirectory(atPath: scratch.url.path) {
            let path = scratch.url.appendingPathComponent(entry).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            chmod(path, isDirectory.boolValue ? 0o555 : 0o444)
        }
        chmod(scratch.url.path, 0o555)
        defer { chmod(scratch.url.path, 0o755) }
        let binary = try ChildProcess.builtExecutable("reservoir").path
        let listed = try await run(["/usr/sbin/runuser", "-u", "nobody", "--", binary, "todo", "list", "--store", store], in: scratch.url)
        #expect(listed.status == 0 && listed.output.contains("written by its owner"), "\(listed.output) \(listed.errors)")
        let refused = try await run(["/usr/sbin/runuser", "-u", "nobody", "--", binary, "todo", "add", "x", "--store", store], in: scratch.url)
        #expect(refused.status == 1, "\(refused.errors)")
        #expect(refused.errors.contains("the store is open read-only (its files are not writable by this process)"), "\(refused.errors)")
    }

    func run(_ command: [String], in directory: URL) async throws -> (status: Int32, output: String, errors: String) {
        let process = try ChildProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), standardError: .captured, in: directory)
        guard let status = await process.waitForExit(within: 60) else {
            throw CLIError("\(command) did not exit within 60 s: \(process.outputText) \(process.errorText)")
        }
        return (status, process.outputText, process.errorText)
    }
}
