import ArgumentParser
import Foundation
import OpenCombineShim
import Reservoir

/// A scripted session on a to-do list, printing every change set the store publishes
/// and the open to-dos after each step.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a scripted to-do session and show what the store announces.",
        discussion: "Example: reservoir demo --store memory:"
    )

    @OptionGroup var options: StoreOptions

    func run() throws {
        let configuration = options.configuration(fallback: "memory:")
        do {
            let store = try Store.open(configuration)
            defer { store.close() }
            print("Store: \(configuration) (\(store.capabilities))")
            let subscription = store.changes.sink { changeSet in
                print("  change set \(changeSet)")
            }
            defer { subscription.cancel() }
            try DemoScript.run(on: store, before: { print("\n\($0)") }, after: {
                let open = try store.fetch(DemoScript.openByPriority)
                for todo in open { print("    [\(todo.priority)] \(todo.title)") }
                if open.isEmpty { print("    (nothing open)") }
            })
        } catch {
            throw fail(error)
        }
    }
}

/// The demo's steps, shared by every backend the demo runs on.
enum DemoScript {
    static let openByPriority = FetchRequest<Todo>(where: \.done == false, sortBy: [.descending(\.priority), .ascending(\.title)])

    private struct Abandoned: Error {}

    /// Runs the steps; `before` gets each step's title, `after` runs once it is committed.
    static func run(on store: Store, before: (String) -> Void, after: () throws -> Void) throws {
        let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
        func todo(_ n: UInt8, _ title: String, _ priority: Int) -> Todo {
            Todo(id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n)), title: title, done: false,
                 priority: priority, created: start.addingTimeInterval(Double(n)), due: nil)
        }
        func step(_ title: String, _ write: (Transaction) throws -> Void) throws {
            before(title)
            do {
                try store.write(write)
            } catch is Abandoned {}
            try after()
        }
        var milk = todo(1, "Buy milk", 2)
        let taxes = todo(2, "File taxes", 3)
        var bike = todo(3, "Fix the bike", 1)

        try step("1. insert \"Buy milk\"") { try $0.insert(milk) }
        try step("2. insert two in one transaction") { try $0.insert(taxes); try $0.insert(bike) }
        milk.title = "Buy oat milk"
        try step("3. edit a title") { try $0.update(milk) }
        bike.priority = 5
        try step("4. reprioritise") { try $0.update(bike) }
        milk.done = true
        try step("5. complete one") { try $0.update(milk) }
        try step("6. a transaction that throws is rolled back: nothing changes, nothing is announced") { tx in
            try tx.delete(taxes)
            throw Abandoned()
        }
        try step("7. delete one") { try $0.delete(taxes) }
    }
}
