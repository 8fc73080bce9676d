import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Calls a closure soon after any process writes one of a few named files: the commit
/// signal of file-based backends (SQLite's database and `-wal` files, LMDB's `data.mdb`),
/// public so a third-party file backend can return one from
/// ``StorageBackend/watchCommits(_:)`` too.
///
///     func watchCommits(_ wake: @escaping @Sendable () -> Void) -> (any CommitWatch)? {
///         FileChangeWatch.watching([path, path + "-wal"], wake: wake)
///     }
///
/// On Linux it uses inotify, one instance per process however many stores are open (the
/// kernel allows a user only 128): each file's directory is watched for the file created,
/// replaced or deleted (so that a `-wal` file deleted and created anew stays watched), and
/// each file that exists for writes, through a watch that removes itself at its first event
/// and is set again once that event is read, so that a process writing in a tight loop pays
/// the kernel for one event per rest of the reading thread rather than one per write (see
/// `InotifyCenter`). Elsewhere it is not available yet and ``watching(_:wake:)`` returns nil,
/// which makes the store probe on a timer instead.
///
/// What it cannot see: writes made through a shared memory map (`MDB_WRITEMAP`, SQLite's
/// `-shm`), and writes on another machine over a network file system. A backend whose
/// commits always also `write(2)` one of the files it names is covered.
public final class FileChangeWatch: CommitWatch {
    #if os(Linux)
    private let registration: Locked<InotifyCenter.Registration?>
    #endif

    /// Starts watching `files` (paths, which need not exist yet; their directories must).
    /// Returns nil where the platform has no file notifications or the watch cannot be set
    /// up (the process is out of inotify instances or watches): callers then probe on a timer.
    public static func watching(_ files: [String], wake: @escaping @Sendable () -> Void) -> FileChangeWatch? {
        #if os(Linux)
        var byDirectory: [String: Set<String>] = [:]
        for file in files {
            let url = URL(fileURLWithPath: file)
            byDirectory[url.deletingLastPathComponent().path, default: []].insert(url.lastPathComponent)
        }
        guard let center = InotifyCenter.shared,
              let registration = center.register(byDirectory, wake: wake)
        else { return nil }
        return FileChangeWatch(registration: registration)
        #else
        return nil
        #endif
    }

    #if os(Linux)
    private init(registration: InotifyCenter.Registration) {
        self.registration = Locked(registration)
    }
    #endif

    /// Stops watching. A wake already under way may still complete.
    public func cancel() {
        #if os(Linux)
        guard let registration = registration.withLock({ current -> InotifyCenter.Registration? in
            defer { current = nil }
            return current
        }) else { return }
        InotifyCenter.shared?.unregister(registration)
        #endif
    }

    deinit { cancel() }
}

#if os(Linux)
/// The process's one inotify instance: routes each event to the registrations whose file names
/// it concerns.
///
/// Each directory has a watch for names created, moved in or deleted, and each watched file
/// that exists a watch of its own for writes, which removes itself at its first event
/// (`IN_ONESHOT`). Why: while a watch on a file, or on its directory, asks for writes, the
/// kernel queues an event for every `write(2)` to the file, merged or not, and the writer pays
/// for it: about 0.5 µs a `pwrite`, six of them in an LMDB single-record commit, a sixth of
/// the commit's time. A file watch that removed itself costs the writer nothing until it is
/// set again, so a process committing in a tight loop pays for one event per round of the
/// reading thread rather than one per write. A directory watch that asks only for names costs
/// a write nothing.
///
/// A round: the thread reads the events and wakes their registrations, sets the watches that
/// fired again, rests ``restMicroseconds``, and wakes the registrations a second time. No write
/// is missed: one made while its file's watch was down (between the event and the watch set
/// again) is seen by the probe that second wake-up queues, and one made later fires the watch. The
/// second wake-up also does what the events a commit's later writes queued did under a watch
/// that stayed set: the first wake-up's probe may run before the commit it was woken for is
/// visible (see ``CommitPoller``), and without it such a commit waits for the first follow-up
/// probe, 1 ms later (with one wake-up a round, the cross-process row's SQLite p99 was about
/// 1 ms in six runs of eight). The watch is set again before the rest, not after it: an event
/// finding the thread asleep costs the writer less than one that must wake it from its read
/// (`Benchmarks/LMDB/commit_protocol.c`, line 6: 13.1 to 13.4 µs a commit against 14.5 to
/// 15.8). And after the first wake-up, not before it: setting a watch looks its path up, and
/// in front of the wake-up it moved the cross-process row's LMDB median from 53 to 66 µs
/// (four runs with the directory watch) to 79 to 142 µs (four runs).
final class InotifyCenter: @unchecked Sendable {
    // @unchecked: `watches`, `routes`, `files`, `fileWatches` and `nextToken` are guarded by
    // `lock`; `buffer` is used only by the reading thread; `descriptor` is set once in init.

    /// One store's interest: its directories' watch descriptors.
    struct Registration: Sendable {
        let token: UInt64
        let descriptors: [Int32]
    }

    private struct Interest {
        let names: Set<String>
        let wake: @Sendable () -> Void
    }

    /// A watched file: its directory's watch descriptor and its name there.
    private struct FileKey: Hashable {
        let directory: Int32
        let name: String
    }

    /// A watched file's path, and its own watch while one is set (nil while the file does not
    /// exist, or the watch could not be set).
    private struct FileWatch {
        let path: String
        var watch: Int32?
    }

    /// nil when the process cannot have an inotify instance (limit reached, no kernel support).
    static let shared: InotifyCenter? = InotifyCenter()

    private let descriptor: Int32
    private let lock = NSLock()
    private var watches: [Int32: [UInt64: Interest]] = [:]
    /// Per directory watch descriptor, per file name, the registrations interested in it: an
    /// event finds them with one lookup, however many stores watch the same directory (50
    /// replicas' files side by side cost 50 name lookups per event when each registration was asked).
    private var routes: [Int32: [String: [UInt64: @Sendable () -> Void]]] = [:]
    /// Every file some registration watches, and which of them each file watch serves (one
    /// file under two names, hard links, shares a watch).
    private var files: [FileKey: FileWatch] = [:]
    private var fileWatches: [Int32: Set<FileKey>] = [:]
    private var nextToken: UInt64 = 0

    private static let directoryMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE)
    private static let fileMask = UInt32(IN_MODIFY | IN_CLOSE_WRITE) | UInt32(IN_ONESHOT)
    private static let fileWrites = UInt32(IN_MODIFY | IN_CLOSE_WRITE)

    /// After reading events, the thread rests this long before reading again, so a process
    /// (this one or another) committing in a tight loop costs one read, and one event, per
    /// rest instead of one per commit. An event after a quiet spell is read at once; one
    /// during the rest waits for its end.
    static let restMicroseconds: UInt32 = 100

    /// The read buffer, used only by the reading thread.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)

    private init?() {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        // A thread of its own blocked in read(2), rather than a Dispatch read source: the
        // source's wake-ups go through Dispatch's manager thread, an eventfd and a worker
        // thread, which cost the committing process more CPU per commit than the commit's own
        // file writes (perf on lmdb-bench's commit loop). The center lives as long as the
        // process (a static), so capturing it is no cycle to break.
        let thread = Thread { [self] in readEvents() }
        thread.name = "reservoir.file-watch"
        thread.start()
    }

    /// The reading thread's loop: block until events arrive, route them, rest, repeat.
    private func readEvents() {
        while let fired = drain() {
            usleep(Self.restMicroseconds)
            if !fired.isEmpty { wakeAgain(fired) }
        }
    }

    /// Wakes the registrations of the files in `fired` a second time (see the type's summary).
    private func wakeAgain(_ fired: Set<FileKey>) {
        lock.lock()
        let wakes = wakesLocked(for: fired)
        lock.unlock()
        for wake in wakes.values { wake() }
    }

    /// The registrations interested in `files`, each once.
    private func wakesLocked(for files: Set<FileKey>) -> [UInt64: @Sendable () -> Void] {
        var wakes: [UInt64: @Sendable () -> Void] = [:]
        for file in files {
            for (token, wake) in routes[file.directory]?[file.name] ?? [:] { wakes[token] = wake }
        }
        return wakes
    }

    func register(_ namesByDirectory: [String: Set<String>], wake: @escaping @Sendable () -> Void) -> Registration? {
        lock.lock()
        defer { lock.unlock() }
        nextToken += 1
        let token = nextToken
        var added: [Int32] = []
        for (directory, names) in namesByDirectory {
            // The same directory watched twice gets the same descriptor back (the mask is
            // always the same, so replacing it changes nothing).
            let watch = inotify_add_watch(descriptor, directory, Self.directoryMask)
            guard watch >= 0 else {
                for watch in added { removeLocked(watch, token) }
                return nil
            }
            // Two directories may be one (a link): the names add up.
            let known = watches[watch]?[token]?.names ?? []
            watches[watch, default: [:]][token] = Interest(names: known.union(names), wake: wake)
            added.append(watch)
            for name in names {
                routes[watch, default: [:]][name, default: [:]][token] = wake
                let key = FileKey(directory: watch, name: name)
                guard files[key] == nil else { continue }
                files[key] = FileWatch(path: directory + "/" + name, watch: nil)
                // Out of watches (not merely no file yet): no signal, as for the directory.
                guard armLocked(key) else {
                    for watch in added { removeLocked(watch, token) }
                    return nil
                }
            }
        }
        return Registration(token: token, descriptors: added)
    }

    func unregister(_ registration: Registration) {
        lock.lock()
        defer { lock.unlock() }
        for watch in registration.descriptors { removeLocked(watch, registration.token) }
    }

    private func removeLocked(_ watch: Int32, _ token: UInt64) {
        for name in watches[watch]?[token]?.names ?? [] {
            routes[watch]?[name]?[token] = nil
            if routes[watch]?[name]?.isEmpty == true {
                routes[watch]?[name] = nil
                let key = FileKey(directory: watch, name: name)
                if let file = files.removeValue(forKey: key)?.watch { dropFileWatchLocked(file, of: key) }
            }
        }
        watches[watch]?[token] = nil
        if watches[watch]?.isEmpty == true {
            watches[watch] = nil
            routes[watch] = nil
            _ = inotify_rm_watch(descriptor, watch)
        }
    }

    /// Sets the file watch of `key` on whatever file its path names now (another file than
    /// before, after a rename over it, or none, after a delete). Returns false only when the
    /// kernel refused the watch for another reason than a missing file (out of watches).
    @discardableResult
    private func armLocked(_ key: FileKey) -> Bool {
        guard var file = files[key] else { return true }
        let watch = inotify_add_watch(descriptor, file.path, Self.fileMask)
        let failure = watch < 0 ? errno : 0
        if let old = file.watch, old != watch { dropFileWatchLocked(old, of: key) }
        file.watch = watch >= 0 ? watch : nil
        files[key] = file
        if watch >= 0 { fileWatches[watch, default: []].insert(key) }
        return watch >= 0 || failure == ENOENT || failure == ENOTDIR
    }

    /// Forgets that file watch `watch` serves `key`, removing the watch once it serves none.
    private func dropFileWatchLocked(_ watch: Int32, of key: FileKey) {
        fileWatches[watch]?.remove(key)
        if fileWatches[watch]?.isEmpty == true {
            fileWatches[watch] = nil
            // Fails harmlessly when the watch removed itself already.
            _ = inotify_rm_watch(descriptor, watch)
        }
    }

    /// Waits for events and reads what is queued (up to a buffer's worth), wakes each interested
    /// registration once, outside the lock, then sets again the watches that fired and those of
    /// names created, replaced or deleted (after the wake-ups, which setting a watch, a path
    /// lookup, would delay). Returns the files of those watches, for ``wakeAgain(_:)`` after the
    /// rest; nil only when the descriptor cannot be read any more, which ends the thread: stores
    /// then rely on their timers.
    private func drain() -> Set<FileKey>? {
        let header = MemoryLayout<inotify_event>.size
        let count = read(descriptor, buffer.baseAddress, buffer.count)
        if count < 0 { return errno == EINTR ? [] : nil }
        var events: [(watch: Int32, mask: UInt32, name: String?)] = []
        var overflowed = false
        var offset = 0
        while offset + header <= count {
            let watch = buffer.load(fromByteOffset: offset, as: Int32.self)
            let eventMask = buffer.load(fromByteOffset: offset + 4, as: UInt32.self)
            let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
            let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[(offset + header)..<min(count, offset + header + length)])
            if eventMask & UInt32(IN_Q_OVERFLOW) != 0 {
                // A queue overflow loses events: wake everybody.
                overflowed = true
            } else {
                let name = nameBytes.isEmpty ? nil : String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                events.append((watch, eventMask, name))
            }
            offset += header + length
        }
        guard overflowed || !events.isEmpty else { return [] }
        // A commit writes the same file several times: each file is looked up once.
        var touched: Set<FileKey> = []
        var rearm: Set<FileKey> = []
        var wakes: [UInt64: @Sendable () -> Void] = [:]
        lock.lock()
        for event in events {
            if let name = event.name {
                // A name created, moved in or deleted in a watched directory.
                guard watches[event.watch] != nil else { continue }
                let key = FileKey(directory: event.watch, name: name)
                touched.insert(key)
                if files[key] != nil { rearm.insert(key) }
            } else if let keys = fileWatches[event.watch] {
                // A watched file written (its watch removed itself), or its watch gone
                // (`IN_IGNORED`: after that event, or the file deleted).
                rearm.formUnion(keys)
                if event.mask & Self.fileWrites != 0 { touched.formUnion(keys) }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    fileWatches[event.watch] = nil
                    for key in keys where files[key]?.watch == event.watch { files[key]?.watch = nil }
                }
            }
        }
        if overflowed {
            rearm = Set(files.keys)
            for interests in watches.values { for (token, interest) in interests { wakes[token] = interest.wake } }
        } else {
            wakes = wakesLocked(for: touched)
        }
        lock.unlock()
        for wake in wakes.values { wake() }
        lock.lock()
        for key in rearm { armLocked(key) }
        lock.unlock()
        return rearm
    }
}
#endif
