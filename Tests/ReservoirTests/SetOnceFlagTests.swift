import Foundation
import Reservoir
import Testing

/// `SetOnceFlag`, a backend's closed flag: one setter wins, and what it did before setting the
/// flag is seen by a reader that sees the flag set (scripts/test-deep runs this suite under
/// ThreadSanitizer, which reports a missing order as a race).
@Suite("SetOnceFlag")
struct SetOnceFlagTests {
    @Test func onlyTheFirstSetSetsIt() {
        let flag = SetOnceFlag()
        #expect(!flag.isSet)
        #expect(flag.set())
        #expect(flag.isSet)
        #expect(!flag.set())
        #expect(flag.isSet)
    }

    @Test func oneOfManyThreadsSetsItAndReadersSeeWhatItWroteBefore() {
        for _ in 0..<20 {
            let flag = SetOnceFlag()
            let box = Box()
            let winners = Locked(0)
            let seen = Locked<[Int]>([])
            let done = DispatchGroup()
            // Threads of their own, not a pool's: a reader spins until the flag is set, and two
            // spinning readers must not hold the only two workers while the setters wait.
            for index in 0..<8 {
                done.enter()
                Thread.detachNewThread {
                    if index % 2 == 0 {
                        // A reader: waits for the flag, then reads what a setter wrote before it.
                        while !flag.isSet {}
                        let value = box.value
                        seen.withLock { $0.append(value) }
                    } else {
                        box.write(index)
                        if flag.set() { winners.withLock { $0 += 1 } }
                    }
                    done.leave()
                }
            }
            done.wait()
            #expect(winners.withLock { $0 } == 1)
            #expect(seen.withLock { $0.count } == 4)
            #expect(seen.withLock { $0.allSatisfy { $0 % 2 == 1 } })
        }
    }
}

/// A value written without a lock before the flag is set, and read only after it is seen set.
private final class Box: @unchecked Sendable {
    private let lock = Locked(())
    nonisolated(unsafe) private(set) var value = 0

    /// The first write only (a later writer's plain write after the flag was set would race
    /// with the readers; the lock only orders the writers among themselves).
    func write(_ newValue: Int) {
        lock.withLock { _ in if value == 0 { value = newValue } }
    }
}
