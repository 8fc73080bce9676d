/// The keyed container a reused encoder or decoder handed out last, kept as the box a
/// `KeyedEncodingContainer` or `KeyedDecodingContainer` is, so the coder's next record is handed
/// the same one while its coding keys stay the same type: making one allocates a box and looks up
/// two generic metadata records and a witness table, where handing out the kept one looks up one.
///
/// The coder is used again only when ``keptNothingElse()`` says no container it handed out is
/// still held by anything but itself.
struct KeptContainer {
    /// The box handed out last, and its key type.
    private var box: AnyObject?
    private var keyType: ObjectIdentifier?
    /// Whether this record was handed `box`; whether it was handed another keyed container,
    /// which nothing here can tell is let go, so the coder is not used again.
    private var handedKept = false
    private var handedOther = false

    /// Readies the container for a new record.
    mutating func start() {
        handedKept = false
        handedOther = false
    }

    /// The kept container when it has `Key`'s type, else `make`'s, kept in turn where
    /// `canKeep` (the container is one reference to its box) and this record was handed no other.
    @inline(__always)
    mutating func container<Key: CodingKey, Container>(keyedBy key: Key.Type, canKeep: Bool, _ make: () -> Container) -> Container {
        let type = ObjectIdentifier(Key.self)
        if let box, keyType == type {
            handedKept = true
            return unsafeBitCast(box, to: Container.self)
        }
        let container = make()
        if !handedKept, canKeep {
            // The one kept before was held by nothing else when this record began: replacing it is safe.
            box = unsafeBitCast(container, to: AnyObject.self)
            keyType = type
            handedKept = true
        } else {
            handedOther = true
        }
        return container
    }

    /// Whether the keyed container this record was handed is held by nothing but the coder (the
    /// record kept no copy of it), and it was handed no other.
    mutating func keptNothingElse() -> Bool {
        guard !handedOther else { return false }
        return box == nil || isKnownUniquelyReferenced(&box)
    }
}

/// Whether `container` (a `KeyedEncodingContainer` or `KeyedDecodingContainer`) is one strong
/// reference to the box it makes around its container, which lets a coder keep it as an object
/// (``KeptContainer``), hand it out again and ask whether anything else holds it. The standard
/// library does not promise that layout, so each coder checks it once, by reflection (about 3.7
/// million instructions, once a process); where it does not hold, every record gets a new coder
/// and container.
func isOneReference<Container>(_ container: Container) -> Bool {
    guard MemoryLayout<Container>.size == MemoryLayout<AnyObject>.size,
          MemoryLayout<Container>.alignment == MemoryLayout<AnyObject>.alignment else { return false }
    let fields = Mirror(reflecting: container).children
    guard fields.count == 1, let field = fields.first?.value, type(of: field) is AnyObject.Type else { return false }
    return unsafeBitCast(container, to: UInt.self) == UInt(bitPattern: ObjectIdentifier(field as AnyObject))
}
