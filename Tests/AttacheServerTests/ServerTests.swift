import Testing
import AttacheServer

@Suite struct ServerPlaceholderTests {
    @Test func nameIsSet() { #expect(AttacheServerInfo.name == "attache-server") }
}
