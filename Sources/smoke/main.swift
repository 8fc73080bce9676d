import Foundation
import Reservoir
import OpenCombineShim

enum Status: String, Codable, ValueConvertible { case open, closed }
struct Tag: Codable, Equatable { var name: String; var weight: Int }
struct Todo: Storable {
    var id: UUID
    var title: String
    var done: Bool
    var priority: Int
    var due: Date?
    var status: Status
    var tags: [Tag]
    static let schema = Schema<Todo>("todos", fields: [.field(\.title), .field(\.done), .field(\.priority, indexed: true), .field(\.due), .field(\.status)])
}
do {
    let store = try Store.open("memory:")
    var seen: [ChangeSet] = []
    let c = store.changes.sink { seen.append($0) }
    let a = Todo(id: UUID(), title: "Buy milk", done: false, priority: 2, due: nil, status: .open, tags: [Tag(name: "x", weight: 1)])
    let b = Todo(id: UUID(), title: "Écrire", done: false, priority: 3, due: Date(), status: .closed, tags: [])
    try store.write { tx in try tx.insert(a); try tx.insert(b) }
    let open = try store.fetch(FetchRequest<Todo>(where: \.done == false && \.priority >= 2, sortBy: [.descending(\.priority), .ascending(\.title)], limit: 50))
    print(open.map(\.title), open == [b, a])
    print(try store.fetch(FetchRequest<Todo>(where: \.due == nil)).map(\.title))
    print(try store.fetch(FetchRequest<Todo>(where: .hasPrefix(\.title, "Buy") || \.status == .closed)).count)
    do { try store.write { tx in try tx.insert(a) } } catch { print("expected:", error) }
    try store.write { tx in var x = a; x.done = true; try tx.update(x); try tx.delete(b) }
    try store.write { tx in var x = a; x.done = true; try tx.upsert(x) }  // no-op
    print(seen)
    print(try RowEncoder().encode(a))
    c.cancel()
} catch { print("ERROR", error) }
