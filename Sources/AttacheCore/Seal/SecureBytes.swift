internal import COpenSSL

/// Key material in a heap buffer that is wiped with `OPENSSL_cleanse` when released.
///
/// The buffer is never copied into Swift arrays by this type, never printed, and never compared in
/// variable time. It is immutable once created, which is what makes sharing it between threads safe.
///
/// ```swift
/// let bytes = SecureBytes(randomCount: 32)
/// bytes.withUnsafeBytes { key in /* hand to a cipher */ }
/// ```
package final class SecureBytes: Sendable, CustomStringConvertible {
    // Immutable after `init` finishes (the only writers run inside initialisers in this module), so
    // concurrent reads are safe; a raw pointer is not Sendable by itself.
    private nonisolated(unsafe) let storage: UnsafeMutableRawBufferPointer

    /// Creates `count` bytes from OpenSSL's CSPRNG.
    package convenience init(randomCount count: Int) {
        self.init(zeroedCount: count)
        SecureRandom.fill(storage)
    }

    /// Copies `bytes`; the caller remains responsible for wiping its own copy.
    package convenience init(_ bytes: some Collection<UInt8>) {
        self.init(zeroedCount: bytes.count)
        _ = storage.initializeMemory(as: UInt8.self, from: bytes)
    }

    init(zeroedCount count: Int) {
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        self.count = count
    }

    deinit {
        OPENSSL_cleanse(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// The number of bytes.
    package let count: Int

    /// Calls `body` with the bytes; do not let the pointer escape.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[..<count]))
    }

    /// Writable view for initialisers in this module only.
    var mutableBytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[..<count]) }

    /// Never the bytes themselves.
    package var description: String { "SecureBytes(\(count) bytes)" }
}
