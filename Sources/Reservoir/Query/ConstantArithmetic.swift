/// Arithmetic on a `#Predicate`'s constants (`$0.score >= limit + 1`), computed once when the
/// request is translated: integers in `Int64` with overflow reported, reals in `Double`.
enum ConstantArithmetic {
    enum Operation: String {
        case add = "+", subtract = "-", multiply = "*"
    }

    /// `a op b`; `refuse` makes the error for an overflow or for operands that are not numbers.
    static func apply(_ operation: Operation, _ a: Value, _ b: Value, refuse: (String) -> ReservoirError) throws -> Value {
        switch (a, b) {
        case let (.integer(x), .integer(y)):
            let (result, overflow) = switch operation {
            case .add: x.addingReportingOverflow(y)
            case .subtract: x.subtractingReportingOverflow(y)
            case .multiply: x.multipliedReportingOverflow(by: y)
            }
            if overflow { throw refuse("overflows Int64 computing \(x) \(operation.rawValue) \(y)") }
            return .integer(result)
        case let (.real(x), .real(y)):
            return .real(real(operation, x, y))
        case let (.integer(x), .real(y)):
            return .real(real(operation, Double(x), y))
        case let (.real(x), .integer(y)):
            return .real(real(operation, x, Double(y)))
        default:
            throw refuse("computes \(a) \(operation.rawValue) \(b), which are not both numbers")
        }
    }

    private static func real(_ operation: Operation, _ x: Double, _ y: Double) -> Double {
        switch operation {
        case .add: x + y
        case .subtract: x - y
        case .multiply: x * y
        }
    }
}
