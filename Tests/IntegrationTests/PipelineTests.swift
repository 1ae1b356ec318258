import Testing
import Attache

@Suite struct PipelinePlaceholderTests {
    @Test func versionIsSet() { #expect(!Attache.version.isEmpty) }
}
