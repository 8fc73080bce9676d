import Reservoir
import ReservoirConformance
import ReservoirPlantedBackend

// The crash test's child for ReservoirCertificationTests: commits until killed, on a
// `planted:` store (with its bug, if the configuration plants one) or the sample's `mine:`.
CrashConsistency.childMain(registry: BackendRegistry([PlantedBackend.factory, PlantedBackend.factory(scheme: "mine")]))
