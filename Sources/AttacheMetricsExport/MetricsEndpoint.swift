package import ArgumentParser
import CoreMetrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// `--metrics-listen` and `--metrics-linger`: Prometheus text exposition on `/metrics` for the life of a
/// run (`batch`, `worker`, `download` of many files), and `--otlp-endpoint` (``OTLPOptions``).
package struct MetricsOptions: ParsableArguments {
    package init() {}

    @OptionGroup package var otlp: OTLPOptions

    @Option(help: ArgumentHelp(
        "Serve Prometheus metrics on http://HOST:PORT/metrics while the command runs.", valueName: "host:port"))
    package var metricsListen: String?

    @Option(help: ArgumentHelp(
        "Seconds to keep serving the final values after the run ends, for a last scrape.", valueName: "seconds"))
    package var metricsLinger: Double = 5

    package func validate() throws {
        if let metricsListen, MetricsEndpoint.split(metricsListen) == nil {
            throw ValidationError("--metrics-listen must be HOST:PORT, e.g. 127.0.0.1:9464")
        }
        guard metricsLinger >= 0, metricsLinger <= 3600 else {
            throw ValidationError("--metrics-linger must be 0 to 3600 seconds")
        }
    }

    /// A Prometheus registry's metrics factory and its endpoint, serving already, when `--metrics-listen`
    /// is given. The caller bootstraps the factory (alone, or beside OTLP's) before making the pipeline.
    func start() throws -> (factory: PrometheusExportFactory, endpoint: MetricsEndpoint)? {
        guard let metricsListen, let (host, port) = MetricsEndpoint.split(metricsListen) else { return nil }
        let registry = PrometheusCollectorRegistry()
        let endpoint = try MetricsEndpoint(registry: registry, host: host, port: port, linger: .seconds(metricsLinger))
        return (PrometheusExportFactory(registry: registry), endpoint)
    }
}

/// The `/metrics` endpoint: a small HTTP/1.1 server over one event loop that answers every `GET
/// /metrics` with the registry's text exposition.
package final class MetricsEndpoint: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let linger: Duration
    /// The port bound (the one asked for, or the kernel's choice for port 0).
    package let port: Int

    init(registry: PrometheusCollectorRegistry, host: String, port: Int, linger: Duration) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            channel = try ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.pipeline.configureHTTPServerPipeline().flatMap {
                        channel.pipeline.addHandler(MetricsHandler(registry: registry))
                    }
                }
                .bind(host: host, port: port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw ValidationError("--metrics-listen \(host):\(port): cannot listen: \(error)")
        }
        self.group = group
        self.linger = linger
        self.port = channel.localAddress?.port ?? port
    }

    /// Keeps serving the final values for the linger time, then closes.
    package func finish() async {
        if linger > .zero { try? await Task.sleep(for: linger) }
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// `HOST:PORT` (`[::1]:9464` for IPv6) split, or nil.
    static func split(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// Answers `GET /metrics` with the exposition and anything else with 404.
private final class MetricsHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let found = head.method == .GET && path == "/metrics"
        let body = found ? registry.emitToBuffer() : Array("not found\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Connection", value: "close")
        let responseHead = HTTPResponseHead(version: head.version, status: found ? .ok : .notFound, headers: headers)
        context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
