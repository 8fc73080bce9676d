import Foundation
import PropertyBased
import Reservoir
import ReservoirConformance
import Testing
@testable import ReservoirLMDB

/// The key encoding must order bytes exactly as `Value.compare` orders values.
@Suite struct KeyEncodingTests {
    static let edges: [Value] = [
        .null, .real(.nan), .real(-.infinity), .real(-.greatestFiniteMagnitude), .real(-1e300),
        .real(-9_223_372_036_854_777_856.0), .real(-9_223_372_036_854_775_808.0), .integer(.min), .integer(.min + 1),
        .real(-4_503_599_627_370_496.5), .integer(-9_007_199_254_740_993), .real(-9_007_199_254_740_992.0),
        .real(-1.5), .integer(-1), .real(-1.0), .real(-0.5), .real(-.leastNonzeroMagnitude), .real(-0.0), .real(0.0),
        .integer(0), .real(.leastNonzeroMagnitude), .real(0.1), .real(0.5), .integer(1), .real(1.0), .real(1.5),
        .integer(9_007_199_254_740_992), .real(9_007_199_254_740_992.0), .integer(9_007_199_254_740_993),
        .real(9_007_199_254_740_994.0), .integer(.max - 1), .integer(.max), .real(9_223_372_036_854_775_808.0),
        .real(1e300), .real(.greatestFiniteMagnitude), .real(.infinity),
        .text(""), .text("\u{0}"), .text("\u{0}\u{0}"), .text("\u{0}a"), .text("a"), .text("a\u{0}"), .text("a\u{0}b"),
        .text("a\u{1}"), .text("ab"), .text("b"), .text("e\u{301}"), .text("é"), .text("\u{FFFF}"), .text("😀"),
        .blob(Data()), .blob(Data([0])), .blob(Data([0, 0])), .blob(Data([0, 0xFF])), .blob(Data([0, 1])),
        .blob(Data([1])), .blob(Data([0xFF])), .blob(Data([0xFF, 0])),
    ]

    static func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

    static func check(_ a: Value, _ b: Value) {
        let encoded = compareBytes(KeyEncoding.encode(a), KeyEncoding.encode(b))
        #expect(sign(encoded) == sign(Value.compare(a, b)), "\(a) vs \(b): bytes \(encoded), values \(Value.compare(a, b))")
    }

    @Test func edgeValuesPairwise() {
        for a in Self.edges {
            for b in Self.edges { Self.check(a, b) }
        }
    }

    @Test func equalValuesEncodeIdentically() {
        #expect(KeyEncoding.encode(.integer(1)) == KeyEncoding.encode(.real(1.0)))
        #expect(KeyEncoding.encode(.real(0.0)) == KeyEncoding.encode(.real(-0.0)))
        #expect(KeyEncoding.encode(.integer(-9_007_199_254_740_992)) == KeyEncoding.encode(.real(-9_007_199_254_740_992.0)))
        #expect(KeyEncoding.encode(.integer(1 << 53 + 1)) != KeyEncoding.encode(.real(Double(1 << 53))))
    }

    @Test func encodingsAreSelfDelimitingAndDecode() {
        for value in Self.edges {
            let bytes = KeyEncoding.encode(value)
            let suffixed = bytes + [0x42, 0x00]
            #expect(suffixed.withUnsafeBytes { KeyEncoding.length(of: $0) } == bytes.count, "\(value)")
            let decoded = bytes.withUnsafeBytes { KeyEncoding.decode($0) }
            #expect(decoded.map { $0 == value } ?? false, "\(value) decoded as \(String(describing: decoded))")
        }
    }

    /// Index keys are value then id: the order must stay value-major, id-minor.
    @Test func compositeKeysOrderByValueThenID() {
        let ids: [Value] = [.integer(-1), .integer(5), .text("a"), .text("a\u{0}"), .real(2.5)]
        for a in Self.edges {
            for b in Self.edges {
                for x in ids {
                    for y in ids {
                        let ka = KeyEncoding.encode(a) + KeyEncoding.encode(x)
                        let kb = KeyEncoding.encode(b) + KeyEncoding.encode(y)
                        var expected = Value.compare(a, b)
                        if expected == 0 { expected = Value.compare(x, y) }
                        #expect(Self.sign(compareBytes(ka, kb)) == Self.sign(expected))
                    }
                }
            }
        }
    }

    /// Random values from a seed: integers near powers of two, reals from random bits and
    /// near integers, short texts and blobs over a small alphabet including 0x00 and 0xFF.
    static func randomValue(_ g: inout SeededGenerator) -> Value {
        switch g.next() % 8 {
        case 0: return .null
        case 1: return .integer(Int64(bitPattern: g.next()))
        case 2:
            let shift = g.next() % 64
            let base = Int64(bitPattern: 1 << shift)
            return .integer(base &+ Int64(g.next() % 5) &- 2) * (g.next() % 2 == 0 ? 1 : -1)
        case 3: return .real(Double(bitPattern: g.next()))
        case 4:
            let shift = Double(g.next() % 70)
            let sign: Double = g.next() % 2 == 0 ? 1 : -1
            let offsets: [Double] = [0, 0.5, 1, -1, 0.25]
            return .real(sign * (pow(2, shift) + offsets[Int(g.next() % 5)]))
        case 5: return .real(Double(Int64(bitPattern: g.next()) >> Int64(g.next() % 60)) + [0, 0.5, -0.5][Int(g.next() % 3)])
        case 6:
            let alphabet: [Character] = ["\u{0}", "a", "b", "é", "😀", "\u{1}"]
            return .text(String((0..<(g.next() % 5)).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }))
        default:
            let alphabet: [UInt8] = [0, 1, 0x7F, 0xFE, 0xFF]
            return .blob(Data((0..<(g.next() % 5)).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }))
        }
    }

    @Test func randomPairsKeepTheOrder() async {
        await propertyCheck(count: 3000, input: Gen.uint64(), Gen.uint64()) { s1, s2 in
            var g1 = SeededGenerator(seed: s1)
            var g2 = SeededGenerator(seed: s2)
            let a = Self.randomValue(&g1)
            let b = Self.randomValue(&g2)
            Self.check(a, b)
            Self.check(a, a)
        }
    }
}


private func * (value: Value, sign: Int64) -> Value {
    if case let .integer(i) = value { return .integer(i &* sign) }
    return value
}
