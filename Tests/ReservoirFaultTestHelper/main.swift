import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite

// The child process of ReservoirFaultTests: commits numbered transactions on the store its
// argument names until it is killed (crash trials), or runs damaged copies of a store
// (`--damaged-files …`).
let registry = BackendRegistry([.sqlite, .lmdb])
if CommandLine.arguments.dropFirst().first == DamagedFiles.childArgument {
    DamagedFiles.childMain(registry: registry)
}
CrashConsistency.childMain(registry: registry)
