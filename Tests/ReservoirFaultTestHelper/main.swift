import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite

// The child process of ReservoirFaultTests: commits numbered transactions on the store its
// argument names until it is killed (crash trials), runs damaged copies of a store
// (`--damaged-files …`), consumes a store's history until it is killed (`--history-consumer …`),
// or migrates a store until it is killed (`--migrate …`).
let registry = BackendRegistry([.sqlite, .lmdb])
if CommandLine.arguments.dropFirst().first == DamagedFiles.childArgument {
    DamagedFiles.childMain(registry: registry)
}
if CommandLine.arguments.dropFirst().first == HistoryConsumerKill.childArgument {
    HistoryConsumerKill.childMain(registry: registry)
}
if CommandLine.arguments.dropFirst().first == MigrationCrash.childArgument {
    MigrationCrash.childMain(registry: registry)
}
CrashConsistency.childMain(registry: registry)
