/// Library-wide constants.
///
/// Not named `Attache`: a type with the module's name would make `Attache.SomeType` (the way to pick
/// Attache's type where another module has one of the same name) resolve to the type, not the module.
public enum AttacheLibrary {
    /// The library version, sent in the default `User-Agent`.
    public static let version = "0.1.0"
}

// The Foundation-free stages (detection, sealing, base64) and the shared error and source types live
// in AttacheCore so that the small `attache` front executable can use them without Foundation; users
// of the library see them through `import Attache`.
@_exported import AttacheCore
