/// Library-wide constants.
///
/// Not named `Attache`: a type with the module's name would make `Attache.SomeType` (the way to pick
/// Attache's type where another module has one of the same name) resolve to the type, not the module.
public enum AttacheLibrary {
    /// The library version, sent in the default `User-Agent`.
    public static let version = "0.1.0"
}

// The stages that need no network (detection, transform, sealing, base64) and the shared error and
// source types live in AttacheCore, which has no Foundation and no libcurl; users of the library see
// them through `import Attache`.
@_exported import AttacheCore
