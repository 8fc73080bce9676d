import CLMDB
import Foundation
import Reservoir
import ReservoirLMDB
import ReservoirTestRecords

// A second process for the LMDB tests. Each mode prints one line per event and flushes,
// so the test can follow along:
//
//     ReservoirLMDBTestHelper write CONFIG FIRST COUNT GAP_MS   "committed ID UNIX_TIME" per commit
//     ReservoirLMDBTestHelper hold-read CONFIG                 one raw read transaction (one reader slot): "reading",
//                                                              then sleeps until killed
//     ReservoirLMDBTestHelper die-in-write CONFIG ID           "writing", then SIGKILLs itself mid-transaction
//     ReservoirLMDBTestHelper fill CONFIG LIMIT_BYTES          file-size limit, writes until an error:
//                                                              "committed N" then "error CODE NATIVE MESSAGE"
//     ReservoirLMDBTestHelper use CONFIG                       reads every note, rewrites each, reads again:
//                                                              "read N", "wrote N", "read N" (a damaged store
//                                                              must fail with an error, exit 2, not a signal)
//     ReservoirLMDBTestHelper read-across CONFIG ENTITY GO_FILE  reads the entity's rows ("row ID COL=VALUE ..."
//                                                              per row, then "read"), waits for GO_FILE, reads
//                                                              them again, puts one more row (id 1000, the
//                                                              stored fields, text values), "wrote"
//     ReservoirLMDBTestHelper backup DIR COPY_DIR              a copy of the environment (mdb_env_copy): "copied"
//     ReservoirLMDBTestHelper restore DIR COPY_DIR             replaces every named database's contents with the
//                                                              copy's, in one write transaction: "restored"
//                                                              (a restore under live stores; raw LMDB, no Store)
//     ReservoirLMDBTestHelper drop DIR NAME                    deletes the named database NAME (mdb_drop), as
//                                                              another process's migration does: "dropped"

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// The raw environment at `path` (a directory), for the modes that go around the library.
func rawEnvironment(_ path: String, readOnly: Bool) -> OpaquePointer {
    var env: OpaquePointer?
    guard mdb_env_create(&env) == 0, let env else { fail("mdb_env_create failed") }
    mdb_env_set_maxdbs(env, 4096)
    mdb_env_set_mapsize(env, 1 << 30)
    let rc = mdb_env_open(env, path, readOnly ? CLMDB_RDONLY : 0, 0o644)
    guard rc == 0 else { fail("mdb_env_open \(path): \(String(cString: mdb_strerror(rc)))") }
    return env
}

func check(_ rc: Int32, _ what: String) {
    if rc != 0 { fail("\(what): \(String(cString: mdb_strerror(rc)))") }
}

/// Every key and value of database `dbi`, in order.
func contents(_ txn: OpaquePointer, _ dbi: MDB_dbi) -> [(Data, Data)] {
    var cursor: OpaquePointer?
    check(mdb_cursor_open(txn, dbi, &cursor), "open a cursor")
    defer { mdb_cursor_close(cursor) }
    var result: [(Data, Data)] = []
    var key = MDB_val()
    var value = MDB_val()
    var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
    while rc == 0 {
        result.append((Data(bytes: key.mv_data, count: key.mv_size), Data(bytes: value.mv_data, count: value.mv_size)))
        rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
    }
    return result
}

/// `restore`: the named databases of `source` replace those of `target`, in one write transaction.
func restore(_ target: String, from source: String) {
    let sourceEnv = rawEnvironment(source, readOnly: true)
    defer { mdb_env_close(sourceEnv) }
    var sourceTxn: OpaquePointer?
    check(mdb_txn_begin(sourceEnv, nil, CLMDB_RDONLY, &sourceTxn), "begin reading the copy")
    defer { mdb_txn_abort(sourceTxn) }
    var saved: [(name: String, flags: UInt32, contents: [(Data, Data)])] = []
    for (name, _) in contents(sourceTxn!, CLMDB_MAIN_DBI) {
        let text = String(decoding: name, as: UTF8.self)
        var dbi = MDB_dbi()
        check(mdb_dbi_open(sourceTxn, text, 0, &dbi), "open \(text) in the copy")
        var flags: UInt32 = 0
        check(mdb_dbi_flags(sourceTxn, dbi, &flags), "flags of \(text)")
        saved.append((text, flags, contents(sourceTxn!, dbi)))
    }
    let env = rawEnvironment(target, readOnly: false)
    defer { mdb_env_close(env) }
    var txn: OpaquePointer?
    check(mdb_txn_begin(env, nil, 0, &txn), "begin the restore")
    let current = contents(txn!, CLMDB_MAIN_DBI).map { String(decoding: $0.0, as: UTF8.self) }
    for name in current where !saved.contains(where: { $0.name == name }) {
        var dbi = MDB_dbi()
        check(mdb_dbi_open(txn, name, 0, &dbi), "open \(name)")
        check(mdb_drop(txn, dbi, 1), "drop \(name)")
    }
    for database in saved {
        var dbi = MDB_dbi()
        check(mdb_dbi_open(txn, database.name, database.flags | CLMDB_CREATE, &dbi), "open \(database.name)")
        check(mdb_drop(txn, dbi, 0), "empty \(database.name)")
        for (key, value) in database.contents {
            key.withUnsafeBytes { k in
                value.withUnsafeBytes { v in
                    var mk = clmdb_val(k.baseAddress, k.count)
                    var mv = clmdb_val(v.baseAddress, v.count)
                    check(mdb_put(txn, dbi, &mk, &mv, 0), "put into \(database.name)")
                }
            }
        }
    }
    check(mdb_txn_commit(txn), "commit the restore")
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: ReservoirLMDBTestHelper MODE CONFIG ...") }
switch arguments[1] {
case "backup":
    guard arguments.count == 4 else { fail("usage: backup DIR COPY_DIR") }
    let env = rawEnvironment(arguments[2], readOnly: true)
    check(mdb_env_copy(env, arguments[3]), "copy the environment")
    mdb_env_close(env)
    say("copied")
    exit(0)
case "restore":
    guard arguments.count == 4 else { fail("usage: restore DIR COPY_DIR") }
    restore(arguments[2], from: arguments[3])
    say("restored")
    exit(0)
case "drop":
    guard arguments.count == 4 else { fail("usage: drop DIR NAME") }
    let env = rawEnvironment(arguments[2], readOnly: false)
    var txn: OpaquePointer?
    check(mdb_txn_begin(env, nil, 0, &txn), "begin the drop")
    var dbi = MDB_dbi()
    check(mdb_dbi_open(txn, arguments[3], 0, &dbi), "open \(arguments[3])")
    check(mdb_drop(txn, dbi, 1), "drop \(arguments[3])")
    check(mdb_txn_commit(txn), "commit the drop")
    mdb_env_close(env)
    say("dropped")
    exit(0)
case "hold-read":
    // Exactly one reader slot, held until killed: a raw read transaction. (Through a Store the
    // process would also read on its commit poller's thread, holding a second slot or not as
    // timing has it, and the test counting the slots a killed reader left would be flaky.)
    let path = String(arguments[2].dropFirst(arguments[2].hasPrefix("lmdb:") ? 5 : 0).prefix { $0 != "?" })
    let env = rawEnvironment(path, readOnly: true)
    var txn: OpaquePointer?
    check(mdb_txn_begin(env, nil, CLMDB_RDONLY, &txn), "begin a read transaction")
    say("reading")
    while true { sleep(60) }
default:
    break
}
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
    case "read-across":
        guard arguments.count == 5 else { fail("usage: read-across CONFIG ENTITY GO_FILE") }
        let name = arguments[3]
        func readRows() throws -> EntityDescription? {
            try store.backend.read { snapshot in
                guard let entity = try snapshot.entities().first(where: { $0.name == name }) else { return nil }
                try snapshot.fetch(Query(entity: entity, sort: [SortTerm(column: entity.idColumn)])) { row in
                    say("row \(row.value(entity.idColumn)) " + row.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
                }
                return entity
            }
        }
        _ = try readRows()
        say("read")
        var waited = 0
        while !FileManager.default.fileExists(atPath: arguments[4]) {
            usleep(20_000)
            waited += 1
            if waited > 1500 { fail("no \(arguments[4]) after 30 s") }
        }
        guard let entity = try readRows() else { fail("no entity \(name) after the go") }
        say("read")
        let columns = [entity.idColumn] + entity.fields.filter { $0 != entity.idColumn }
        let row = Row(columns: columns, values: [.integer(1000)] + columns.dropFirst().map { .text("helper \($0)") })
        try store.backend.write { tx in try tx.put(entity, id: .integer(1000), row: row) }
        say("wrote")
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
