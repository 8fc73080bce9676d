import ArgumentParser
import Foundation
import Reservoir

struct TodoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "todo",
        abstract: "Add, complete, remove and list to-dos.",
        discussion: "Example: reservoir todo add \"File taxes\" --priority 3 --due 2026-12-01",
        subcommands: [Add.self, Done.self, Remove.self, List.self]
    )

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a to-do and print its id.",
            discussion: "Example: reservoir todo add \"Buy milk\" --priority 2 --due 2026-12-01"
        )
        @OptionGroup var options: StoreOptions
        @Argument(help: "What to do.") var title: String
        @Option(help: "Higher is more urgent.") var priority: Int = 0
        @Option(help: ArgumentHelp("The day it is due: YYYY-MM-DD (a time, YYYY-MM-DDTHH:MM or ISO 8601, is taken as its day in UTC).", valueName: "DATE")) var due: String?

        func run() throws {
            try reporting {
                guard !title.trimmingCharacters(in: .whitespaces).isEmpty else {
                    throw CommandFailure("the title is empty; give the to-do a title, such as reservoir todo add \"Buy milk\"")
                }
                let dueDay = try due.map(DateText.parse).map(DateText.format)
                let store = try options.openTodos()
                defer { store.close() }
                let todo = Todo(id: UUID(), title: title, priority: priority, created: Date(), dueDay: dueDay)
                try store.write { try $0.insert(todo) }
                print(todo.id.uuidString)
            }
        }
    }

    struct Done: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark a to-do done.", discussion: "Example: reservoir todo done 3F2A")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The to-do's id or a unique prefix of it.") var id: String

        func run() throws {
            try reporting {
                let store = try options.openTodos()
                defer { store.close() }
                var todo = try Todo.find(id, in: store)
                todo.done = true
                try store.write { try $0.update(todo) }
                print("done: \(todo.title)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a to-do.", discussion: "Example: reservoir todo rm 3F2A")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The to-do's id or a unique prefix of it.") var id: String

        func run() throws {
            try reporting {
                let store = try options.openTodos()
                defer { store.close() }
                let todo = try Todo.find(id, in: store)
                try store.write { try $0.delete(todo) }
                print("removed: \(todo.title)")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List to-dos.", discussion: "Example: reservoir todo list --open --sort due")
        @OptionGroup var options: StoreOptions
        @Flag(help: "Only to-dos not done.") var open = false
        @Option(help: "Sort by priority, title, due or created.") var sort: TodoSort = .priority
        @Option(help: ArgumentHelp("Only to-dos whose title has #TAG.", valueName: "TAG")) var tag: String?
        @Flag(help: "One JSON array instead of lines.") var json = false

        func run() throws {
            try reporting {
                let store = try options.openTodos()
                defer { store.close() }
                let wanted = tag.map { $0.drop { $0 == "#" }.lowercased() }
                let todos = try store.fetch(Todo.request(openOnly: open, sort: sort)).filter { todo in
                    wanted.map { todo.tagList.contains($0) } ?? true
                }
                if json {
                    print(try jsonLine(todos.map(\.json)))
                } else if todos.isEmpty {
                    print(open ? "nothing open" : "no to-dos")
                } else {
                    for todo in todos { print(todo.line) }
                }
            }
        }
    }
}

extension TodoSort: ExpressibleByArgument {}
