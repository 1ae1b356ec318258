/// A test's own failure with a message: a precondition of the test that did not hold (a tool that
/// did not start, an answer of the wrong kind), as opposed to an `#expect` on the code under test.
package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
