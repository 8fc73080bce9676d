import Foundation
import Reservoir

extension DamagedFiles {
    /// The child's whole program, run as `CHILD --damaged-files CONFIGURATION SEED FIRST COUNT RESULTS [NOTES REPEATS]`:
    /// for mutants `FIRST..<FIRST+COUNT` of the store `CONFIGURATION` names, copies it,
    /// damages the copy, then opens, reads, writes, reads again, verifies and reopens it,
    /// appending one line per step to `RESULTS` (written at once, so a crash loses none).
    public static func childMain(registry: BackendRegistry) -> Never {
        let arguments = CommandLine.arguments
        guard arguments.count == 7 || arguments.count == 9, arguments[1] == childArgument, let seed = UInt64(arguments[3]),
              let first = Int(arguments[4]), let count = Int(arguments[5]) else {
            FileHandle.standardError.write(Data("usage: \(arguments.first ?? "child") \(childArgument) CONFIGURATION SEED FIRST COUNT RESULTS [NOTES REPEATS]\n".utf8))
            exit(2)
        }
        var size = Size()
        if arguments.count == 9 {
            guard let notes = Int(arguments[7]), let repeats = Int(arguments[8]) else {
                FileHandle.standardError.write(Data("NOTES and REPEATS must be integers, not \(arguments[7]) and \(arguments[8])\n".utf8))
                exit(2)
            }
            size = Size(notes: notes, titleRepeats: repeats)
        }
        let fd = open(arguments[6], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0, let pristine = try? StoreConfiguration(arguments[2]) else {
            FileHandle.standardError.write(Data("cannot open \(arguments[6]) or parse \(arguments[2])\n".utf8))
            exit(2)
        }
        let files = files(of: pristine.location)
        for index in first..<(first + count) {
            let emit = { (line: String) in
                let bytes = Array("\(index) \(line)\n".utf8)
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            emit("begin")
            let location = pristine.location + ".mutant-\(index)"
            do {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: pristine.location, isDirectory: &isDirectory), isDirectory.boolValue {
                    try FileManager.default.createDirectory(atPath: location, withIntermediateDirectories: false)
                }
                for file in files { try FileManager.default.copyItem(atPath: pristine.location + file.suffix, toPath: location + file.suffix) }
                if let mutation = mutation(index, seed: seed, files: files) { try apply(mutation, at: location) }
            } catch {
                FileHandle.standardError.write(Data("cannot make mutant \(index): \(error)\n".utf8))
                exit(3)
            }
            let configuration = pristine.string.replacingOccurrences(of: pristine.location, with: location)
            exercise(configuration, location: location, size: size, registry: registry, emit: emit)
            remove(location: location)
            emit("end")
        }
        exit(0)
    }

    /// Runs every step on one mutant; each reports `ok`, `error CODE named|unnamed MESSAGE`
    /// or `foreign TYPE MESSAGE`.
    static func exercise(_ configuration: String, location: String, size: Size, registry: BackendRegistry, emit: (String) -> Void) {
        func step<R>(_ body: () throws -> R) -> R? {
            do {
                let result = try body()
                emit("ok")
                return result
            } catch let error as ReservoirError {
                let named = error.message.contains(location)
                emit("error \(error.code) \(named ? "named" : "unnamed") \(error.description.replacingOccurrences(of: "\n", with: " "))")
            } catch {
                emit("foreign \(type(of: error)) \(String(describing: error).replacingOccurrences(of: "\n", with: " "))")
            }
            return nil
        }
        let expected = Dictionary(uniqueKeysWithValues: Self.expected(size).map { ($0.id, $0) })
        func compare(_ notes: [Note]?) {
            guard let notes else { return }
            let same = notes.count == expected.count && notes.allSatisfy { note in expected[note.id].map { $0.title == note.title && $0.rank == note.rank } ?? false }
            if !same { emit("different") }
        }
        guard let store = step({ try Store.open(configuration, registry: registry) }) else { return }
        emit("opened")
        compare(step { try store.fetch(Note.self) })
        _ = step { try store.count(FetchRequest<Note>()) }
        _ = step { try store.get(Note.self, id: 7) }
        _ = step { try store.fetch(FetchRequest<Note>(where: \.rank == 3)) }
        _ = step {
            try store.write { tx in
                try tx.upsert(Note(id: 10_000, title: "after the damage", rank: 3))
                try tx.upsert(Note(id: 5, title: "changed after the damage", rank: 5))
                _ = try tx.delete(Note.self, id: 6)
            }
        }
        _ = step { try store.fetch(FetchRequest<Note>(where: \.rank == 3)) }
        _ = step { try store.read { try $0.lastSequence() } }
        if let report = step({ try store.verify() }), !report.isIntact { emit("damaged") }
        store.close()
        guard let again = step({ try Store.open(configuration, registry: registry) }) else { return }
        _ = step { try again.fetch(Note.self) }
        again.close()
    }
}
