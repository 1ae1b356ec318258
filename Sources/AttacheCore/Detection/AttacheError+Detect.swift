extension AttacheError.Code {
    /// A declared message kind contradicts the content (a "voice note" that is a PDF) and the
    /// detector's policy is to reject it (`MIMEDetector.DeclaredKindPolicy.reject`).
    public static let kindMismatch = AttacheError.Code("kind-mismatch")
}
