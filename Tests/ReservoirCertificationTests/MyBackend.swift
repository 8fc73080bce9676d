import Reservoir
import ReservoirPlantedBackend

/// The DocC article's `MyBackend`: the planted file backend, with no bug planted.
typealias MyBackend = PlantedBackend

extension PlantedBackend {
    /// The initializer the article's factory calls; the planted backend has no durability levels.
    convenience init(path: String, durability: Durability, retention: Int) throws {
        try self.init(path: path, retention: retention)
    }
}
