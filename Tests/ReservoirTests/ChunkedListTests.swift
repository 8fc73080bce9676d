import PropertyBased
@testable import Reservoir
import Testing

@Suite("ChunkedList")
struct ChunkedListTests {
    @Test("behaves like an array under random inserts, removals and truncations, across chunk splits")
    func matchesArray() async {
        let operations = zip(Gen.int(in: 0...2), Gen.int(in: 0...100_000)).array(of: 1...400)
        await propertyCheck(count: 40, input: Gen.int(in: 0...1500), operations) { initial, steps in
            var model = Array(0..<initial)
            var list = ChunkedList(model)
            var next = initial
            for (kind, position) in steps {
                switch kind {
                case 0 where !model.isEmpty:
                    let index = position % model.count
                    #expect(list.remove(at: index) == model.remove(at: index))
                case 2 where position % 10 == 0:
                    let index = model.isEmpty ? 0 : position % model.count
                    #expect(list.removeSuffix(from: index) == Array(model[index...]))
                    model.removeSubrange(index...)
                default:
                    let index = position % (model.count + 1)
                    model.insert(next, at: index)
                    list.insert(next, at: index)
                    next += 1
                }
                #expect(list.count == model.count)
            }
            #expect(list.array == model)
            #expect(Array(list) == model)
            #expect(list.last == model.last)
        }
    }

    @Test("partitionPoint finds the insertion point in sorted content of any size")
    func partitionPoint() async {
        await propertyCheck(count: 60, input: Gen.int(in: 0...3000), Gen.int(in: -10...6010)) { size, probe in
            let sorted = (0..<size).map { $0 * 2 }
            let list = ChunkedList(sorted)
            let expected = sorted.firstIndex { $0 >= probe } ?? sorted.count
            let found = list.partitionPoint { $0 < probe }  // computed outside #expect: a closure inside it crashes Swift 6.3.1's SendNonSendable pass
            #expect(found == expected)
        }
    }
}
