import Hummingbird

/// Placeholder until the reference server lands.
public enum AttacheServerInfo {
    public static let name = "attache-server"
}
