/// What the Transform stage did to a video, voice note or animation (``AttacheCore/MediaConverter``).
public struct MediaReceipt: Sendable, Codable, Hashable {
    /// `keep` (already compliant), `remux` (index moved to the front) or `encode`.
    public var plan: MediaConverter.VideoPlan
    /// Seconds.
    public var duration: Double?
    /// For video and animations: the MP4's index comes first, so a player can start early.
    public var supportsStreaming: Bool?
    /// For voice: Telegram's 63-byte waveform, base64 (the `waveform` form field).
    public var waveform: String?
    /// True for a GIF or APNG sent as a silent MP4.
    public var animation: Bool?

    /// Creates a media receipt.
    package init(plan: MediaConverter.VideoPlan, duration: Double? = nil, supportsStreaming: Bool? = nil,
                waveform: String? = nil, animation: Bool? = nil) {
        self.plan = plan
        self.duration = duration
        self.supportsStreaming = supportsStreaming
        self.waveform = waveform
        self.animation = animation
    }

    /// The facts of `output`, or nil when it was not converted media.
    init?(_ output: TransformOutput) {
        guard let plan = output.mediaPlan else { return nil }
        self.init(plan: plan, duration: output.duration, supportsStreaming: output.supportsStreaming,
                  waveform: output.waveform.map { Base64.encode($0) }, animation: output.isAnimation ? true : nil)
    }
}
