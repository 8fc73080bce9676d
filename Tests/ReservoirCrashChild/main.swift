import Reservoir
import ReservoirConformance
import ReservoirLMDB
import ReservoirSQLite

// The child process of ReservoirFaultTests' crash-consistency trials: commits numbered
// transactions on the store its argument names until it is killed.
CrashConsistency.childMain(registry: BackendRegistry([.sqlite, .lmdb]))
