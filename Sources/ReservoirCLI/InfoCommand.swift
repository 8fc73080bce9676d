import ArgumentParser
import Foundation
import Reservoir

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a store's backend, location, capabilities, schema version, record types and change-log sequence.",
        discussion: "Example: reservoir info --store lmdb:./todos.lmdb"
    )
    @OptionGroup var options: StoreOptions
    @Flag(help: "One JSON object instead of lines.") var json = false

    func run() throws {
        try reporting {
            let store = try options.open()
            defer { store.close() }
            let (entities, sequence) = try store.read { snapshot in
                (try snapshot.entities().map { ($0, try snapshot.count(Query(entity: $0))) }, try snapshot.lastSequence())
            }
            let schemaVersion = try store.schemaVersion()
            if json {
                print(try jsonLine([
                    "store": options.shownConfiguration, "location": StoreConfiguration.redact(store.backend.location),
                    "capabilities": store.capabilities.description, "sequence": sequence, "schemaVersion": schemaVersion,
                    "types": Dictionary(uniqueKeysWithValues: entities.map { ($0.0.name, $0.1) }),
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
        }
    }
}
