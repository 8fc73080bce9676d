import ArgumentParser
import Foundation
import Reservoir

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a whole store for damage: the files, every record, every index, the change log.",
        discussion: """
            Prints what was read and each problem found, then "intact" (exit 0) or the number of
            problems (exit 1). A store too damaged to open is reported the same way. It never
            writes. To save what is readable from a damaged store: reservoir copy DAMAGED NEW.

            Example: reservoir verify --store lmdb:./todos.lmdb
            """
    )
    @OptionGroup var options: StoreOptions

    func run() throws {
        let report: VerificationReport
        do {
            let store = try options.open()
            defer { store.close() }
            report = try store.verify()
        } catch let error as ReservoirError where error.code == .corrupt || error.code == .cannotOpen {
            print("damaged: \(error)")
            print("1 problem found (the store could not be opened)")
            throw ExitCode.failure
        } catch {
            FileHandle.standardError.write(Data("reservoir: \(error)\n".utf8))
            throw ExitCode.failure
        }
        print(report)
        if !report.isIntact { throw ExitCode.failure }
    }
}
