import Foundation

/// Each thread's spare object of one kind, in a slot object of the thread's own (a
/// thread-specific value): a coder takes the spare, so a coder nested in a record's coding makes
/// its own, and gives it back, with no lock. A slot is released when its thread exits.
///
/// ``RowEncoder`` keeps its encoder this way and ``RowDecoder`` its decoder. Generic types hold no
/// static storage, so each kind is one file-level `let`.
struct ThreadSpare<Kept: AnyObject>: Sendable {
    private let key: pthread_key_t?

    init() {
        var key = pthread_key_t()
        // The destructor releases the slot as any object: a C function cannot name `Kept`.
        #if canImport(Darwin)
        let status = pthread_key_create(&key) { Unmanaged<AnyObject>.fromOpaque($0).release() }
        #else
        let status = pthread_key_create(&key) { $0.map { Unmanaged<AnyObject>.fromOpaque($0).release() } }
        #endif
        self.key = status == 0 ? key : nil
    }

    /// The calling thread's slot; `nil` where the platform would not keep one (every coder
    /// then makes its own object).
    func slot() -> Slot? {
        guard let key else { return nil }
        if let slot = pthread_getspecific(key) {
            return Unmanaged<Slot>.fromOpaque(slot).takeUnretainedValue()
        }
        let slot = Unmanaged.passRetained(Slot())
        guard pthread_setspecific(key, slot.toOpaque()) == 0 else {
            slot.release()
            return nil
        }
        return slot.takeUnretainedValue()
    }

    /// One thread's spare.
    final class Slot {
        /// Touched only by the thread whose slot this is.
        @exclusivity(unchecked) private var kept: Kept?

        func take() -> Kept? {
            let taken = kept
            kept = nil
            return taken
        }

        /// Keeps `spare`, unless another was given back meanwhile.
        func giveBack(_ spare: Kept) {
            if kept == nil { kept = spare }
        }
    }
}
