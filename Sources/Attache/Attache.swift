/// Namespace for library-wide constants.
public enum Attache {
    /// The library version, sent in the default `User-Agent`.
    public static let version = "0.1.0"
}
