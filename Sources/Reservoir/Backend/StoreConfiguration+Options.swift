/// Option parsing every backend shares, so the same option reads, and fails, alike everywhere.
extension StoreConfiguration {
    /// `.invalidConfiguration` for option `key`: names the configuration (password hidden),
    /// the value given, and what was expected.
    public func invalidOption(_ key: String, expected: String) -> ReservoirError {
        ReservoirError(.invalidConfiguration, "store configuration \"\(redacted)\": option \(key)=\(options[key] ?? "") is not valid; expected \(expected)")
    }

    /// `durability=…`, one of `accepted`, or `default` when the option is absent.
    public func durability(accepting accepted: [Durability] = [.normal, .full], default: Durability) throws -> Durability {
        guard let text = options["durability"] else { return `default` }
        guard let value = Durability(rawValue: text.lowercased()), accepted.contains(value) else {
            let names = accepted.map(\.rawValue)
            throw invalidOption("durability", expected: names.dropLast().joined(separator: ", ") + " or " + (names.last ?? ""))
        }
        return value
    }

    /// `retention=N`: how many change sets the change log keeps for other processes to
    /// catch up on, 0 keeping all; `default` when the option is absent.
    public func retention(default: Int) throws -> Int {
        try integer("retention", in: 0...Int.max, default: `default`, expected: "a number of change sets to keep, or 0 to keep all")
    }

    /// `mode=readonly` (or `readwrite`, the default): whether the store is opened for reading
    /// only. A backend also opens read-only by itself when its files are not writable.
    public func readOnly() throws -> Bool {
        guard let text = options["mode"] else { return false }
        switch text.lowercased() {
        case "readonly": return true
        case "readwrite": return false
        default: throw invalidOption("mode", expected: "readonly or readwrite")
        }
    }

    /// `.readOnly`, for a write to `store` (its location as messages name it).
    public static func readOnlyError(_ store: String, explicitly: Bool) -> ReservoirError {
        explicitly
            ? ReservoirError(.readOnly, "\(store): the store is open read-only (mode=readonly), so writes are refused; open it without mode=readonly to write")
            : ReservoirError(.readOnly, "\(store): the store is open read-only (its files are not writable by this process), so writes are refused; write as a user who may write them")
    }

    /// An integer option within `range`, or `default` when it is absent.
    public func integer(_ key: String, in range: ClosedRange<Int>, default: Int, expected: String) throws -> Int {
        guard let text = options[key] else { return `default` }
        guard let value = Int(text), range.contains(value) else { throw invalidOption(key, expected: expected) }
        return value
    }
}
