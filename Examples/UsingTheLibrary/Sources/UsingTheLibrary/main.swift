import Foundation
import OpenCombineShim      // Combine's API: Combine itself on Apple platforms, OpenCombine elsewhere
import Reservoir
import ReservoirMacros
import ReservoirSQLite      // and/or ReservoirLMDB, ReservoirPostgres

@Storable("messages")
struct Message {
    var id: Int
    @Indexed var channel: String
    @Searchable var text: String                      // folded copies kept for case/diacritic-insensitive search
    var score: Int
    @Column("sent_at") var sentAt: Date
    var reactions: [String: Int] = [:]                // a nested value: stored as one opaque column
    @Transient var isSelected = false                 // kept in memory, never stored
    var preview: String { String(text.prefix(12)) }   // computed: never stored
}

BackendRegistry.shared.register(.sqlite)
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chat-\(UUID())")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
let store = try Store.open("sqlite:" + directory.appendingPathComponent("chat.sqlite").path)

let now = Date()
try store.write { tx in
    try tx.insert(Message(id: 1, channel: "general", text: "Hello, everyone", score: 3, sentAt: now, reactions: ["👋": 2]))
    try tx.insert(Message(id: 2, channel: "random", text: "Lunch?", score: 5, sentAt: now))
}
let request = FetchRequest<Message>(where: \.channel == "general" && \.score >= 2,
                                    sortBy: [.descending(\.sentAt)], limit: 50)
print(try store.fetch(request).map(\.preview))   // ["Hello, every"]
// The same request in Foundation's terms: translated into the same predicate, run natively.
let same = FetchRequest(#Predicate<Message> { $0.channel == "general" && $0.score >= 2 },
                        sortBy: [SortDescriptor(\.sentAt, order: .reverse)], limit: 50)
print(try store.fetch(same).map(\.id))           // [1]
let lunch = FetchRequest<Message>(where: .contains(\.text, "LÜNCH", options: [.caseInsensitive, .diacriticInsensitive]))
print(try store.fetch(lunch).map(\.id))          // [2]

// Live: the current results as insertions, then one difference per commit that changes them.
let watching = store.differencesPublisher(for: request)
    .applyingChanges([String]()) { "\($0.channel): \($0.text)" }
    .sink(receiveCompletion: { print($0) }, receiveValue: { rows in print(rows) })
try store.write { tx in
    try tx.insert(Message(id: 3, channel: "general", text: "Minutes attached", score: 4, sentAt: now + 60))
}
watching.cancel()

// Or with async/await, here until the second difference.
var seen = 0
for try await difference in store.differences(for: request) {
    print("\(difference.insertions.count) inserted, \(difference.removals.count) removed")
    seen += 1
    if seen == 2 { break }
    try store.write { tx in _ = try tx.delete(Message.self, id: 1) }
}

// A query on a property that is not stored fails with an error naming it.
do {
    _ = try store.fetch(FetchRequest<Message>(where: \.preview == "Hello"))
} catch {
    print(error)   // ... Message.preview is not stored (it is a computed property), so ...
}
store.close()
try FileManager.default.removeItem(at: directory)
