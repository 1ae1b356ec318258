/// One form field of an upload: a name and a text value.
///
/// Detection derives these from what it read in the file's headers (see `Detection.uploadFields`);
/// the pipeline adds its own and sends them all as `multipart/form-data` fields.
///
/// ```swift
/// let field = UploadField(name: "width", value: "1280")
/// ```
public struct UploadField: Sendable, Hashable, Codable {
    /// The field name, sent as the part's `name`.
    public var name: String
    /// The field value, sent as the part's body.
    public var value: String

    /// Creates a field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
