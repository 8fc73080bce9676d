import Foundation
import OpenCombineShim
import Reservoir
import Testing

private struct Counter: Storable {
    var id: Int
    var value: Int
    static let schema = Schema<Counter>("counters", fields: [.field(\.value)])
}

@Suite("Store")
struct StoreTests {
    @Test("configuration strings parse into scheme, location and options")
    func parsing() throws {
        let config = try StoreConfiguration(" SQLite:./data/app.sqlite?durability=full&busytimeout=5000 ")
        #expect(config.scheme == "sqlite")
        #expect(config.location == "./data/app.sqlite")
        #expect(config.options == ["durability": "full", "busytimeout": "5000"])
        #expect(try StoreConfiguration("memory:").location == "")
    }

    @Test("malformed configuration strings name what was given and what is expected", arguments: [
        ("app.sqlite", "no scheme"), ("1abc:x", "invalid scheme"), ("sqlite:x?durability", "key=value"),
        ("sqlite:x?a=1&a=2", "twice"), ("nosuch:x", "unknown scheme"), ("memory:somewhere", "takes no location"),
        ("memory:?cache=1", "unknown option"),
    ])
    func malformed(_ input: String, _ fragment: String) {
        let error = #expect(throws: ReservoirError.self) { try Store.open(input, registry: BackendRegistry()) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(input.trimmingCharacters(in: .whitespaces)) == true, "message names the input: \(String(describing: error))")
        #expect(error?.message.contains(fragment) == true, "message says \(fragment): \(String(describing: error))")
    }

    @Test("an unknown scheme lists the registered ones; third-party schemes register like built-ins")
    func registry() throws {
        let registry = BackendRegistry()
        let error = #expect(throws: ReservoirError.self) { try Store.open("custom:thing", registry: registry) }
        #expect(error?.message.contains("memory:") == true)
        registry.register(BackendFactory(scheme: "custom", summary: "custom:NAME") { _ in MemoryBackend() })
        let store = try Store.open("custom:thing", registry: registry)
        try store.write { try $0.insert(Counter(id: 1, value: 1)) }
        #expect(try store.get(Counter.self, id: 1)?.value == 1)
        #expect(registry.unregister(scheme: "custom"))
    }

    @Test("a subscriber may write to the store while receiving, without deadlock or reordering")
    func reentrantWrite() throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        let seen = Locked<[UInt64]>([])
        let cancellable = store.changeSets.sink { changeSet in
            seen.withLock { $0.append(changeSet.sequence) }
            if changeSet.sequence == 1 {
                // Nested in the delivery of #1: committed now, delivered right after #1.
                try? store.write { try $0.insert(Counter(id: 2, value: 2)) }
                seen.withLock { $0.append(100) }
            }
        }
        try store.write { try $0.insert(Counter(id: 1, value: 1)) }
        let afterFirst = seen.withLock { $0 }
        #expect(afterFirst == [1, 100, 2])
        try store.write { try $0.insert(Counter(id: 3, value: 3)) }
        let afterSecond = seen.withLock { $0 }
        #expect(afterSecond == [1, 100, 2, 3])
        cancellable.cancel()
    }

    @Test("writes from many threads each deliver before returning, in sequence order")
    func concurrentDelivery() async throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        let seen = Locked<[UInt64]>([])
        let cancellable = store.changeSets.sink { changeSet in seen.withLock { $0.append(changeSet.sequence) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<50 {
                        let sequence = try await store.write { tx -> Int in
                            try tx.insert(Counter(id: t * 100 + i, value: i))
                            return t * 100 + i
                        }
                        _ = sequence
                    }
                }
            }
            try await group.waitForAll()
        }
        let delivered = seen.withLock { $0 }
        #expect(delivered == Array(1...400))
        cancellable.cancel()
    }

    @Test("async read and write run off the caller's thread and return results")
    func asyncAPI() async throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        try await store.write { tx in try tx.insert(Counter(id: 1, value: 41)) }
        let value = try await store.read { try $0.get(Counter.self, id: 1)?.value }
        #expect(value == 41)
    }

    @Test("a closed store refuses work with a clear error")
    func closed() throws {
        let store = try Store.open("memory:", registry: BackendRegistry())
        store.close()
        let error = #expect(throws: ReservoirError.self) { try store.fetch(Counter.self) }
        #expect(error?.code == .closed)
    }
}

/// Error messages stay on one line whatever the input held, and a location that invalid
/// UTF-8 was decoded into is refused rather than opened as another file.
@Suite struct ErrorMessageTests {
    @Test(arguments: ["nope:/tmp/a\nb", "sqlite:/tmp/x\u{1B}[2J.sqlite?durability=\r", "memory:?x=\u{2028}\u{0}"])
    func controlCharactersAreEscaped(configuration: String) throws {
        let error = try #require(throws: ReservoirError.self) { try Store.open(configuration, registry: BackendRegistry()) }
        #expect(!error.message.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "\u{2028}" }, "\(error.message)")
        #expect(error.message.contains("\\u{"), "\(error.message)")
        var changed = error
        changed.message = "set later\nstill one line"
        #expect(changed.message == "set later\\u{a}still one line")
    }

    @Test func aLocationWithAReplacementCharacterIsRefused() throws {
        let error = try #require(throws: ReservoirError.self) { try StoreConfiguration("sqlite:/tmp/caf\u{FFFD}.sqlite") }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains("U+FFFD"), "\(error.message)")
    }
}
