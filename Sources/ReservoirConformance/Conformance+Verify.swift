import Foundation
import Reservoir

extension ConformanceSuite {
    static let verifyCases: [ConformanceCase] = [
        ConformanceCase("verify", "an intact store verifies intact: every record type's rows counted, indexes agreeing, the change log read") { context in
            let empty = try context.store.verify()
            try expect(empty.isIntact, "an empty store: \(empty.problems)")
            try context.store.insertItems(standardItems)
            try context.store.write { tx in
                try tx.insert(AllTypes.sample(3))
                _ = try tx.delete(Item.self, id: 2)
                try tx.upsert(Item(id: 4, name: "changed", score: 7, rank: 3, group: "fruit"))
            }
            let report = try context.store.verify()
            try expect(report.isIntact, "problems found in an intact store: \(report.problems)")
            try expect(report.recordsRead, "records were read")
            let counts = Dictionary(uniqueKeysWithValues: report.entities.map { ($0.name, $0.rows) })
            try expectEqual(counts[Item.schema.name], standardItems.count - 1, "rows counted for \(Item.schema.name)")
            try expectEqual(counts[AllTypes.schema.name], 1, "rows counted for \(AllTypes.schema.name)")
            try expectEqual(report.lastSequence, try context.store.read { try $0.lastSequence() }, "the last sequence")
            if context.store.capabilities.contains(.multiProcess) {  // an in-process backend may keep no log
                try expect(report.changeLogEntries > 0, "the change log's entries were read (\(report.changeLogEntries))")
            }
            try expect(report.description.hasSuffix("intact"), "the report ends in its verdict: \(report.description)")
        },

        ConformanceCase("verify", "verify on a closed store throws .closed") { context in
            context.store.close()
            _ = try expectError(.closed, "verify after close") { try context.store.verify() }
        },

        ConformanceCase("verify", "every call on a closed store throws .closed naming the store, and closing again is harmless") { context in
            try context.store.insertItems([Item(id: 1, name: "one")])
            context.store.close()
            context.store.close()
            let name = context.store.configuration?.redacted ?? context.store.backend.location
            for (what, call) in [
                ("read", { _ = try context.store.read { try $0.lastSequence() } }),
                ("fetch", { _ = try context.store.fetch(Item.self) }),
                ("write", { try context.store.write { tx in try tx.insert(Item(id: 2, name: "two")) } }),
                ("an empty write", { try context.store.write { _ in } }),
            ] as [(String, () throws -> Void)] {
                let error = try expectError(.closed, "\(what) after close") { try call() }
                try expect(error.message.contains(name), "the \(what) error names the store \(name): \(error.message)")
            }
        },
    ]
}
