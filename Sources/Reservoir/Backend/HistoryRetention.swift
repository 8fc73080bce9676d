import Foundation

/// How much history a store keeps: the rule every built-in backend follows, decided here in one
/// place and carried out by the backend (``WriteTransaction/trimChangeLog(through:)``).
///
/// A change set is kept while any of these keeps it, and dropped once none does:
/// - **count**: it is among the newest `count` change sets (`retention=N`; 0: the count keeps
///   none, and with no age either, everything is kept);
/// - **age**: it is younger than `age` (`retentionage=DURATION`): a token stays answerable for
///   at least that long after the commit it follows;
/// - **a consumer's hold**: a named consumer holds history after its token
///   (``Store/retainHistory(for:from:)``), until it releases the hold or the hold has not been
///   renewed for `holdAge` (`holdage=DURATION`, 7 days unless given): a consumer that died
///   cannot make the store keep its history for ever.
///
/// The newest change set is always kept. Trimming runs in this library's write transactions,
/// every ``trimInterval`` change sets, so the log may hold up to that many more than the rule
/// keeps; plain-SQL writes never trim. Each opener of a store trims by its own options: give
/// every process the same ones.
///
/// Age is measured with a coarse clock the store keeps beside the log: the sequence committed
/// at moments at least `age / 256` (and at least a second) apart, and the commit before each. A change set is dropped no
/// sooner than `age` after its commit, and at the latest one clock step later (at the next trim).
public struct HistoryRetention: Sendable, Hashable, CustomStringConvertible {
    /// Keep the newest `count` change sets (0: no count).
    public var count: Int
    /// Keep every change set younger than this, when given.
    public var age: Duration?
    /// A consumer's hold not renewed for this long no longer keeps history.
    public var holdAge: Duration

    public init(count: Int = 10_000, age: Duration? = nil, holdAge: Duration = .seconds(7 * 86_400)) {
        self.count = max(0, count)
        self.age = age
        self.holdAge = holdAge
    }

    /// Trimming runs when a commit's sequence is a multiple of this.
    public static let trimInterval: UInt64 = 64

    /// Whether everything is kept, so nothing is ever trimmed.
    var keepsAll: Bool { count == 0 && age == nil }

    public var description: String {
        var parts = [count == 0 ? "no count" : "the newest \(count) change sets"]
        if let age { parts.append("those younger than \(Self.text(age))") }
        parts.append("consumers' holds renewed within \(Self.text(holdAge))")
        return (keepsAll ? "everything" : parts.joined(separator: ", "))
    }

    /// The newest sequence the log may drop after change set `newest`, or 0 when none.
    func droppable(newest: UInt64, now: Date, clock: HistoryClock, holds: [HistoryHoldRecord]) -> UInt64 {
        guard !keepsAll, newest > 1 else { return 0 }
        var cutoff = newest - 1  // the newest change set is always kept
        if count > 0 { cutoff = min(cutoff, newest > UInt64(count) ? newest - UInt64(count) : 0) }
        if let age { cutoff = min(cutoff, clock.newestSequence(committedBefore: now.addingTimeInterval(-Self.seconds(age)))) }
        for hold in holds where hold.isLive(at: now, holdAge: holdAge) {
            // The held token's own change set stays: it is how the store checks the token.
            cutoff = min(cutoff, hold.sequence > 0 ? hold.sequence - 1 : 0)
        }
        return cutoff
    }

    /// The clock's step for `age`: age / 256, at least a second.
    static func clockStep(_ age: Duration) -> TimeInterval { max(1, seconds(age) / 256) }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (whole, fraction) = duration.components
        return TimeInterval(whole) + TimeInterval(fraction) / 1e18
    }

    /// A duration as the options write it: `90s`, `15m`, `12h`, `7d`.
    static func text(_ duration: Duration) -> String {
        let whole = duration.components.seconds
        for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60)] where whole >= size && whole % size == 0 {
            return "\(whole / size)\(unit)"
        }
        return "\(whole)s"
    }
}

extension StoreConfiguration {
    /// The history options every backend shares: `retention=N` (change sets, 0: no count),
    /// `retentionage=DURATION` and `holdage=DURATION` (a whole number followed by `s`, `m`, `h`
    /// or `d`; seconds without a unit). See ``HistoryRetention``.
    public func historyRetention(defaultCount: Int) throws -> HistoryRetention {
        HistoryRetention(count: try retention(default: defaultCount),
                         age: try duration("retentionage"),
                         holdAge: try duration("holdage") ?? .seconds(7 * 86_400))
    }

    /// The option names ``historyRetention(defaultCount:)`` reads.
    public static let historyOptionNames = ["retention", "retentionage", "holdage"]

    private func duration(_ key: String) throws -> Duration? {
        guard let text = options[key]?.lowercased() else { return nil }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let size = units[last] {
            digits = text.dropLast()
            unit = size
        }
        guard let value = Int64(digits), value >= 1, value <= Int64.max / unit / 1_000 else {
            throw invalidOption(key, expected: "a duration of 1 or more: a whole number followed by s, m, h or d (7d, 12h, 90s)")
        }
        return .seconds(value * unit)
    }
}
