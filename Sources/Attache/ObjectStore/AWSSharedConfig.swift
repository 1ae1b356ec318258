internal import AttacheCore
import FoundationEssentials

/// The AWS CLI's shared files, read as it reads them: the credentials file (`[name]` sections) and the
/// config file (`[default]` and `[profile name]` sections), INI with `key = value` lines, `#` and `;`
/// comments, and indented lines under a key as that key's sub-settings (`s3 =` then `  endpoint_url = …`).
struct AWSSharedConfig: Sendable {
    /// Where the credentials file is looked for.
    let credentialsPath: String
    /// Where the config file is looked for.
    let configPath: String

    /// The files `environment` names, else those under `$HOME/.aws`.
    init(environment: [String: String]) {
        let home = environment["HOME"] ?? PathText.homeDirectory
        credentialsPath = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home + "/.aws/credentials"
        configPath = environment["AWS_CONFIG_FILE"] ?? home + "/.aws/config"
    }

    /// The section `profile` of the credentials file; nil when the file or the section is missing.
    func credentials(profile: String) -> [String: String]? {
        Self.sections(path: credentialsPath)?[profile]
    }

    /// The profile's section of the config file (`[default]`, `[profile NAME]`, or `[NAME]` as the CLI also
    /// takes); nil when missing. Sub-settings appear as `parent.key` (`s3.endpoint_url`).
    func config(profile: String) -> [String: String]? {
        guard let sections = Self.sections(path: configPath) else { return nil }
        if profile == "default" { return sections["default"] ?? sections["profile default"] }
        return sections["profile " + profile] ?? sections[profile]
    }

    /// Every section of the INI file at `path`; nil when it cannot be read.
    static func sections(path: String) -> [String: [String: String]]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return parse(String(decoding: data, as: UTF8.self))
    }

    /// Parses INI text as the AWS CLI writes it.
    static func parse(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        var parent: String?
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let indented = rawLine.first == " " || rawLine.first == "\t"
            let line = rawLine.trimmingBlanks
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().trimmingBlanks
                let words = name.split(separator: " ", omittingEmptySubsequences: true)
                current = words.joined(separator: " ")
                parent = nil
                if sections[current!] == nil { sections[current!] = [:] }
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingBlanks.lowercased()
            let value = line[line.index(after: equals)...].trimmingBlanks
            if indented, let parent {
                sections[current]?[parent + "." + key] = value
            } else {
                parent = value.isEmpty ? key : nil
                if !value.isEmpty { sections[current]?[key] = value }
            }
        }
        return sections
    }
}
