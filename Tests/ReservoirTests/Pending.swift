// Placeholder so the package builds on branch `lmdb` until main's ReservoirTests land;
// removed when main is merged.
