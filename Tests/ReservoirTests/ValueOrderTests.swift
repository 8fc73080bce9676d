import Foundation
import PropertyBased
import Reservoir
import Testing

/// Values that probe the order's edges: every storage class, int/real ties and near-ties,
/// signed zeros, infinities, NaN, byte-distinct but canonically equal strings.
private let edgeValues: [Value] = [
    .null, .integer(.min), .integer(-1), .integer(0), .integer(1), .integer(1 << 53), .integer((1 << 53) + 1), .integer(.max),
    .real(-.infinity), .real(-1.5), .real(-0.0), .real(0.0), .real(1.0), .real(9_007_199_254_740_992), .real(9_223_372_036_854_775_808),
    .real(-9_223_372_036_854_775_808), .real(.infinity), .real(.nan), .real(.leastNonzeroMagnitude),
    .text(""), .text("A"), .text("a"), .text("ab"), .text("\u{e9}"), .text("e\u{301}"), .text("\u{0}"),
    .blob(Data()), .blob(Data([0])), .blob(Data([0, 0])), .blob(Data([255])),
]

private let valueGenerator = Gen<Value>.oneOf(
    Gen.int(in: 0...(edgeValues.count - 1)).map { edgeValues[$0] },
    Gen.int64(in: -4...4).map { Value.integer($0) },
    Gen.int64(in: Int64.min...Int64.max).map { Value.integer($0) },
    Gen.double(in: -4...4).map { Value.real(($0 * 2).rounded() / 2) },
    Gen.double(in: -1e20...1e20).map { Value.real($0) },
    Gen.ascii.string(of: 0...3).map { Value.text($0) },
    Gen.uint8(in: 0...3).array(of: 0...3).map { Value.blob(Data($0)) }
)

@Suite("Value order")
struct ValueOrderTests {
    @Test("compare is antisymmetric, and == and hashing agree with it")
    func consistentWithEquality() async {
        await propertyCheck(count: 2000, input: valueGenerator, valueGenerator) { a, b in
            let ab = Value.compare(a, b), ba = Value.compare(b, a)
            #expect(ab.signum() == -ba.signum(), "compare(\(a), \(b)) = \(ab) but compare(\(b), \(a)) = \(ba)")
            #expect((ab == 0) == (a == b), "compare(\(a), \(b)) = \(ab) but == says \(a == b)")
            #expect((a < b) == (ab < 0))
            #expect(QueryEvaluator.compare(a, .equal, b) == (ab == 0), "the evaluator's == disagrees with the order for \(a), \(b)")
            if a == b { #expect(a.hashValue == b.hashValue, "\(a) == \(b) but their hashes differ") }
            if a.isIdentical(to: b) { #expect(a == b, "\(a) is identical to \(b) but not ==") }
        }
    }

    @Test("compare is transitive")
    func transitive() async {
        await propertyCheck(count: 3000, input: valueGenerator, valueGenerator, valueGenerator) { a, b, c in
            if Value.compare(a, b) <= 0 && Value.compare(b, c) <= 0 {
                #expect(Value.compare(a, c) <= 0, "\(a) <= \(b) <= \(c) but not \(a) <= \(c)")
            }
            if a == b && b == c { #expect(a == c, "== is not transitive for \(a), \(b), \(c)") }
        }
    }

    @Test("every pair of edge values is ordered consistently when sorted")
    func sortedEdgesArePairwiseOrdered() {
        let sorted = edgeValues.sorted()
        for i in sorted.indices {
            for j in sorted.indices where i < j {
                #expect(Value.compare(sorted[i], sorted[j]) <= 0, "\(sorted[i]) sorted before \(sorted[j]) but compares after")
            }
        }
    }

    @Test("storage classes order null < number < text < blob")
    func storageClassOrder() {
        #expect(Value.null < .integer(.min))
        #expect(Value.real(.infinity) < .text(""))
        #expect(Value.integer(.max) < .text(""))
        #expect(Value.text("\u{10FFFF}") < .blob(Data()))
    }

    @Test("integers and reals compare exactly, without rounding through Double")
    func integerRealExactness() {
        #expect(Value.integer((1 << 53) + 1) > .real(9_007_199_254_740_992))
        #expect(Value.integer(1 << 53) == .real(9_007_199_254_740_992))
        #expect(Value.integer(.max) < .real(9_223_372_036_854_775_808))
        #expect(Value.integer(.min) == .real(-9_223_372_036_854_775_808))
        #expect(Value.integer(2) > .real(1.5) && Value.integer(1) < .real(1.5))
        #expect(Value.integer(-2) < .real(-1.5) && Value.integer(-1) > .real(-1.5))
        #expect(Value.real(-0.0) == .integer(0) && Value.real(-0.0) == .real(0.0))
        #expect(!Value.real(-0.0).isIdentical(to: .real(0.0)))
        #expect(!Value.integer(1).isIdentical(to: .real(1.0)))
    }

    @Test("text compares by UTF-8 bytes, not canonical equivalence")
    func textIsBytewise() {
        #expect(Value.text("\u{e9}") != .text("e\u{301}"))
        #expect("\u{e9}" == "e\u{301}", "Swift's String == equates them; the contract must not")
        #expect(Value.text("B") < .text("a"))
        #expect(Value.text("a") < .text("ab"))
        #expect(Value.text("e\u{301}") < .text("\u{e9}"))  // 0x65 < 0xC3
    }

    @Test("text order is the byte order of the UTF-8, for short (inline) and long (heap) strings alike")
    func textOrderIsByteOrder() async {
        // Letters around a shared prefix, so that many pairs tie on their first bytes; a
        // two-byte and a four-byte character, whose leading bytes sort above every ASCII one.
        let pieces = Gen.int(in: 0...5).map { ["a", "b", "\u{e9}", "\u{1F600}", "long shared prefix ", "\u{0}"][$0] }
        let text = pieces.array(of: 0...6).map { $0.joined() }
        await propertyCheck(count: 2000, input: text, text) { a, b in
            let bytes = Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) ? -1 : (Array(a.utf8) == Array(b.utf8) ? 0 : 1)
            #expect(Value.compare(.text(a), .text(b)) == bytes, "compare(\(a.debugDescription), \(b.debugDescription)) disagrees with their UTF-8 bytes' order")
        }
    }

    @Test("NaN sorts below every other number and equals only NaN")
    func nanIsOrdered() {
        #expect(Value.real(.nan) == .real(.nan))
        #expect(Value.real(.nan) < .real(-.infinity))
        #expect(Value.real(.nan) < .integer(.min))
        #expect(Value.null < .real(.nan))
    }
}
