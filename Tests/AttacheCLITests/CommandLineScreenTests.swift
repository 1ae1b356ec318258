import Testing
@testable import AttacheCLI

/// ``CommandLineScreen/misreadHelpWord(in:)``: the words ArgumentParser would read as a bundle of short
/// flags holding `-h`, and so as a help request, although they are not one.
@Suite struct CommandLineScreenTests {
    @Test(arguments: [
        (["attache", "upload", "-photo.jpg", "--url", "http://h/"], "-photo.jpg"),
        (["attache", "detect", "-h.txt"], "-h.txt"),
        (["attache", "encrypt", "-o", "out", "-hash"], "-hash"),
    ])
    func aDashedWordWithAnHIsFound(_ arguments: [String], _ word: String) {
        #expect(CommandLineScreen.misreadHelpWord(in: arguments) == word)
    }

    @Test(arguments: [
        ["attache", "upload", "-h"],
        ["attache", "upload", "--help"],
        ["attache", "upload", "-help"],
        ["attache", "help", "upload"],
        ["attache", "detect", "-v.txt"],
        ["attache", "detect", "--", "-photo.jpg"],
        ["attache", "detect", "./-photo.jpg"],
        ["attache", "upload", "--show-keys", "a.jpg"],
    ])
    func helpRequestsAndOtherWordsAreLeftToTheParser(_ arguments: [String]) {
        #expect(CommandLineScreen.misreadHelpWord(in: arguments) == nil)
    }
}
