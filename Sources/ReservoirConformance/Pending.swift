// Placeholder so the package builds on branch `lmdb` until main's ReservoirConformance
// lands; removed when main is merged.
import Reservoir
