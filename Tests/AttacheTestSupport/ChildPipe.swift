import CProcess
import Foundation
import Glibc

/// A pipe for one child's standard stream whose two descriptors are close-on-exec, so that no other
/// child, started at the same moment by another test, inherits them.
///
/// Foundation's `Pipe` makes inheritable descriptors, and its `Process` does not close the ones a child
/// should not have: a long-lived child (a boto3 session, an emulator) started while a short one ran
/// kept the write end of the short one's standard input, and the short one (`openssl dgst`) waited for
/// an end of input that never came; a kept write end of an output pipe hides a child's end the same way.
/// Here the descriptors are made with `pipe2(O_CLOEXEC)` (CProcess); the child gets its end through the `dup2` of
/// `posix_spawn`, which clears the flag on the copy, and ``Foundation/Process/run(input:output:error:)``
/// closes the child's ends in this process once it runs.
package final class ChildPipe: Sendable {
    /// The end this process reads (a child's output) or the child reads (its input).
    package let fileHandleForReading: FileHandle
    /// The end the child writes (its output) or this process writes (the child's input).
    package let fileHandleForWriting: FileHandle

    /// Makes the pipe.
    package init() throws {
        var descriptors: [Int32] = [-1, -1]
        guard attache_pipe_cloexec(&descriptors) == 0 else {
            throw TestFailure("pipe2 failed: \(String(cString: strerror(errno)))")
        }
        fileHandleForReading = FileHandle(fileDescriptor: descriptors[0], closeOnDealloc: true)
        fileHandleForWriting = FileHandle(fileDescriptor: descriptors[1], closeOnDealloc: true)
    }
}

extension Process {
    /// Starts the process with its standard streams on `input`, `output` and `error` (the null device
    /// where nil; `error` may be `output`), then closes the child's ends in this process, so that the
    /// child's end of its output is seen as soon as it ends and its input ends when this process closes
    /// ``ChildPipe/fileHandleForWriting``.
    package func run(input: ChildPipe?, output: ChildPipe?, error: ChildPipe?) throws {
        standardInput = input?.fileHandleForReading ?? FileHandle.nullDevice
        standardOutput = output?.fileHandleForWriting ?? FileHandle.nullDevice
        standardError = error?.fileHandleForWriting ?? FileHandle.nullDevice
        try run()
        try input?.fileHandleForReading.close()
        try output?.fileHandleForWriting.close()
        if let error, error !== output { try error.fileHandleForWriting.close() }
    }
}
