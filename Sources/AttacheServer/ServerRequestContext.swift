import Hummingbird
internal import NIOCore

/// The request context of the reference server: Hummingbird's core storage plus the connection's
/// channel, which the fault injector needs to close a connection without answering.
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}
