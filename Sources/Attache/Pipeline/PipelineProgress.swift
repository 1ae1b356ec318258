/// Progress of one attachment through the pipeline.
public enum PipelineProgress: Sendable {
    /// A stage began.
    case stage(AttacheError.Stage)
    /// Upload progress.
    case upload(UploadProgress)
}
