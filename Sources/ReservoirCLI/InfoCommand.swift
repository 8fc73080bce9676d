import ArgumentParser
import Foundation
import Reservoir

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a store's backend, location, capabilities, schema version, record types, change-log sequence and the history it holds.",
        discussion: "Example: reservoir info --store lmdb:./todos.lmdb"
    )
    @OptionGroup var options: StoreOptions
    @Flag(help: "One JSON object instead of lines.") var json = false

    static func time(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    func run() throws {
        try reporting {
            let store = try options.open()
            defer { store.close() }
            let (entities, sequence) = try store.read { snapshot in
                (try snapshot.entities().map { ($0, try snapshot.count(Query(entity: $0))) }, try snapshot.lastSequence())
            }
            let schemaVersion = try store.schemaVersion()
            let history = try store.retainedHistory()
            if json {
                print(try jsonLine([
                    "store": options.shownConfiguration, "location": StoreConfiguration.redact(store.backend.location),
                    "capabilities": store.capabilities.description, "sequence": sequence, "schemaVersion": schemaVersion,
                    "types": Dictionary(uniqueKeysWithValues: entities.map { ($0.0.name, $0.1) }),
                    "history": [
                        "oldest": history.oldest.description, "newest": history.newest.description, "changeSets": history.count,
                        "retention": history.retention?.description ?? "the backend's own",
                        "holds": history.holds.map { hold in
                            ["consumer": hold.consumer, "token": hold.token.description, "renewed": Self.time(hold.renewed),
                             "expires": hold.expires.map(Self.time) ?? ""]
                        },
                    ] as [String: Any],
                ] as [String: Any]))
                return
            }
            print("store:        \(options.shownConfiguration)")
            print("location:     \(StoreConfiguration.redact(store.backend.location))")
            print("capabilities: \(store.capabilities)")
            print("sequence:     \(sequence)")
            print("schema:       version \(schemaVersion)" + (schemaVersion == 0 ? " (never migrated)" : ""))
            print("record types:" + (entities.isEmpty ? " none" : ""))
            for (entity, count) in entities {
                print("  \(entity.name): \(count) record\(count == 1 ? "" : "s")")
            }
            print("history:      \(history.count) change set\(history.count == 1 ? "" : "s"), from after #\(history.oldest.sequence) to #\(history.newest.sequence)")
            print("  oldest token: \(history.oldest)")
            print("  keeps:        \(history.retention?.description ?? "what the backend keeps")")
            print("  holds:" + (history.holds.isEmpty ? "        none" : ""))
            for hold in history.holds {
                print("    \(hold.consumer): after #\(hold.token.sequence), renewed \(Self.time(hold.renewed))"
                      + (hold.expires.map { ", expires \(Self.time($0))" } ?? ""))
            }
        }
    }
}
