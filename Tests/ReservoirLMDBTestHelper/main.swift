import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirTestRecords

// A second process for the LMDB tests. Each mode prints one line per event and flushes,
// so the test can follow along:
//
//     ReservoirLMDBTestHelper write CONFIG FIRST COUNT GAP_MS   "committed ID UNIX_TIME" per commit
//     ReservoirLMDBTestHelper hold-read CONFIG                 "reading", then sleeps until killed
//     ReservoirLMDBTestHelper die-in-write CONFIG ID           "writing", then SIGKILLs itself mid-transaction
//     ReservoirLMDBTestHelper fill CONFIG LIMIT_BYTES          file-size limit, writes until an error:
//                                                              "committed N" then "error CODE NATIVE MESSAGE"
//     ReservoirLMDBTestHelper use CONFIG                       reads every note, rewrites each, reads again:
//                                                              "read N", "wrote N", "read N" (a damaged store
//                                                              must fail with an error, exit 2, not a signal)

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: ReservoirLMDBTestHelper MODE CONFIG ...") }
let registry = BackendRegistry([.lmdb])

do {
    let store = try Store.open(arguments[2], registry: registry)
    switch arguments[1] {
    case "write":
        guard arguments.count == 6, let first = Int(arguments[3]), let count = Int(arguments[4]), let gap = Int(arguments[5]) else {
            fail("usage: write CONFIG FIRST COUNT GAP_MS")
        }
        // PADDING=N makes each record N bytes longer (to fill small maps).
        let padding = String(repeating: " ", count: Int(ProcessInfo.processInfo.environment["PADDING"] ?? "0") ?? 0)
        for id in first..<(first + count) {
            if gap > 0 { usleep(UInt32(gap * 1000)) }
            try store.write { tx in try tx.insert(Note(id: id, title: "from another process" + padding, priority: id)) }
            say("committed \(id) \(Date().timeIntervalSince1970)")
        }
    case "hold-read":
        try store.read { _ in
            say("reading")
            while true { sleep(60) }
        }
    case "die-in-write":
        guard arguments.count == 4, let id = Int(arguments[3]) else { fail("usage: die-in-write CONFIG ID") }
        try store.write { tx in
            try tx.insert(Note(id: id, title: "never committed"))
            say("writing")
            kill(getpid(), SIGKILL)
            sleep(60)
        }
    case "fill":
        guard arguments.count == 4, let limit = UInt64(arguments[3]) else { fail("usage: fill CONFIG LIMIT_BYTES") }
        signal(SIGXFSZ, SIG_IGN)
        var rl = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
        guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &rl) == 0 else { fail("setrlimit failed: \(errno)") }
        var committed = 0
        let payload = String(repeating: "x", count: 2000)
        do {
            while true {
                try store.write { tx in
                    for i in 0..<50 { try tx.insert(Note(id: committed * 50 + i, title: payload)) }
                }
                committed += 1
            }
        } catch let error as ReservoirError {
            say("committed \(committed * 50)")
            say("error \(error.code) \(error.nativeCode.map(String.init) ?? "-") \(error.message)")
            // The store stays usable for reading what was committed.
            let count = try store.count(FetchRequest<Note>())
            say("readable \(count)")
        }
    case "use":
        let notes = try store.fetch(Note.self)
        say("read \(notes.count)")
        try store.write { tx in
            for var note in notes {
                note.title += "!"
                note.priority = (note.priority ?? 0) + 1
                try tx.upsert(note)
            }
        }
        say("wrote \(notes.count)")
        say("read \(try store.count(FetchRequest<Note>()))")
    default:
        fail("unknown mode \(arguments[1])")
    }
    store.close()
} catch {
    fail("error: \(error)")
}
