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

    @Test func oneOfManyThreadsSetsIt() {
        for _ in 0..<20 {
            let flag = SetOnceFlag()
            let winners = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                if flag.set() { winners.withLock { $0 += 1 } }
            }
            #expect(winners.withLock { $0 } == 1)
            #expect(flag.isSet)
        }
    }

    @Test func readersThatSeeItSetSeeWhatTheSetterWroteBefore() {
        for round in 1...20 {
            let flag = SetOnceFlag()
            let box = Box()
            let seen = Locked<[Int]>([])
            let late = Locked(0)
            let done = DispatchGroup()
            // Threads of their own, not a pool's: a reader spins until the flag is set, and
            // spinning readers must not hold the only workers while the setter waits for one.
            for index in 0..<6 {
                done.enter()
                Thread.detachNewThread {
                    switch index {
                    case 0:
                        // The setter: a plain write, then the flag.
                        box.value = round
                        _ = flag.set()
                    case 1, 2:
                        // Late setters: once it is set, setting it again does nothing.
                        while !flag.isSet {}
                        if !flag.set() { late.withLock { $0 += 1 } }
                    default:
                        // Readers: once they see it set, they see the setter's write.
                        while !flag.isSet {}
                        let value = box.value
                        seen.withLock { $0.append(value) }
                    }
                    done.leave()
                }
            }
            done.wait()
            #expect(late.withLock { $0 } == 2)
            #expect(seen.withLock { $0 } == [round, round, round])
        }
    }
}

/// A value written without a lock before the flag is set, and read only after it is seen set
/// (ThreadSanitizer reports a race here unless the flag orders the two).
private final class Box: @unchecked Sendable {
    nonisolated(unsafe) var value = 0
}
