import Reservoir

/// Writes a record's ``Reservoir/Storable/makeRow()``, ``Reservoir/Storable/init(row:)`` and
/// ``Reservoir/Storable/init(reader:)`` (with ``Reservoir/Storable/readsColumns`` true) from
/// its stored properties, so the store maps it without `Codable`'s per-field dynamic
/// dispatch (a fetch or bulk insert of small records takes about half the time):
///
///     import Reservoir
///     import ReservoirMacros
///
///     @RowMapped
///     struct Todo: Storable {
///         var id: UUID
///         var title: String
///         var done: Bool
///         static let schema = Schema<Todo>("todos", fields: [.field(\.title), .field(\.done)])
///     }
///
/// The rows are the ones `Codable` through ``Reservoir/RowEncoder`` writes, so a type can
/// gain or lose the attribute without touching stored data: the columns follow a
/// `CodingKeys` enum declared in the struct (its order and raw values), or else the stored
/// properties in declaration order; a `let` with an initial value is written but not read;
/// fields of ``Reservoir/ValueConvertible`` types store their mapping, other `Codable`
/// fields their single value or JSON text. The expansion adds `rowMappedColumns`, the
/// column names, to a top-level non-generic struct.
///
/// A struct that writes its own `encode(to:)` or `init(from:)`, or has property wrappers
/// or `lazy` properties, is refused at compile time: write `makeRow()` and `init(row:)` by
/// hand for it. `CodingKeys` or a `Codable` implementation declared in another extension
/// is not seen by the macro; keep them in the struct's body.
@attached(extension, names: named(makeRow), named(init(row:)), named(init(reader:)), named(readsColumns), named(rowMappedColumns))
public macro RowMapped() = #externalMacro(module: "ReservoirMacroPlugin", type: "RowMappedMacro")
