import Glibc

/// Decrypts what a ``Sealer`` with the same scheme, key and transfer encoding produced.
///
/// Authenticated schemes release no plaintext that failed verification: `stream-gcm` verifies each
/// segment before releasing it, `signal` verifies the MAC over the whole blob in a first pass. Every
/// way sealed data can be wrong has its own error code (see ``AttacheError/Code``): `.sealedHeaderInvalid`,
/// `.invalidKey`, `.sealedDataTruncated`, `.sealedSegmentMisplaced`, `.authenticationFailed`,
/// `.sealedPaddingInvalid`, `.base64Invalid`.
///
/// ```swift
/// let unsealer = Unsealer(scheme: .streamGCM, key: try AttachmentKey(contentsOfFile: "photo.key"))
/// try unsealer.unseal(fileAt: "photo.sealed", to: "photo.jpg")
/// ```
package struct Unsealer: Sendable {
    /// The encryption scheme.
    package let scheme: SealScheme
    /// The key.
    package let key: AttachmentKey
    /// How the sealed bytes are represented.
    package let transferEncoding: TransferEncoding
    /// For `signal`: the real plaintext length from the receipt. When nil the bucket padding is kept.
    package let plaintextByteCount: Int64?
    /// For `matrix`: the counter block and the ciphertext's expected SHA-256, from the message's
    /// `EncryptedFile`.
    package let matrixValues: MatrixOpeningValues?

    /// Creates an unsealer; `plaintextByteCount` matters only for `signal`. For `matrix` use
    /// ``init(matrixFile:transferEncoding:)``.
    package init(
        scheme: SealScheme, key: AttachmentKey, transferEncoding: TransferEncoding = .binary,
        plaintextByteCount: Int64? = nil
    ) {
        self.scheme = scheme
        self.key = key
        self.transferEncoding = transferEncoding
        self.plaintextByteCount = plaintextByteCount
        matrixValues = nil
    }

    /// An unsealer for the `matrix` scheme with the key, IV and hash of a message's `EncryptedFile`.
    /// - Throws: ``AttacheError`` as ``MatrixEncryptedFile/openingValues()`` does.
    package init(matrixFile: MatrixEncryptedFile, transferEncoding: TransferEncoding = .binary) throws {
        let values = try matrixFile.openingValues()
        scheme = .matrix
        key = values.key
        self.transferEncoding = transferEncoding
        plaintextByteCount = nil
        matrixValues = MatrixOpeningValues(iv: values.iv, sha256: values.sha256)
    }

    /// Returns a reader of the plaintext that decrypts as it is pulled.
    ///
    /// `signal` reads `sealed` twice (MAC first), which is why this takes a re-openable source.
    /// - Throws: ``AttacheError`` — here for a bad key size, otherwise from the reader's `read`.
    package func unseal(_ sealed: any ByteSource) throws -> any ByteReader {
        let encoding = transferEncoding
        let openBinary: @Sendable () throws -> any ByteReader = {
            let raw = try sealed.makeReader()
            guard let alphabet = encoding.alphabet else { return raw }
            return ProducingReader(Base64DecodingProducer(base: raw, alphabet: alphabet))
        }
        switch scheme {
        case .streamGCM:
            return ProducingReader(
                try StreamGCMOpenProducer(key: key, sealed: try openBinary(), sealedCountBound: sealed.byteCount))
        case .signal:
            return ProducingReader(try SignalOpenProducer(key: key, plaintextCount: plaintextByteCount, openSealed: openBinary))
        case .matrix:
            guard let matrixValues else {
                throw AttacheError(
                    .invalidArgument, stage: .seal, "matrix needs the iv and hashes.sha256 of the file info")
            }
            return ProducingReader(
                try MatrixOpenProducer(
                    key: key, iv: matrixValues.iv, sha256: matrixValues.sha256, openSealed: openBinary))
        case .legacyCBC, .legacyECB:
            return ProducingReader(
                try LegacyAESProducer(scheme: scheme, key: key, source: try openBinary(), encrypt: false))
        case .none:
            return try openBinary()
        }
    }

    /// Decrypts the file at `input` into `output`, streaming, in bounded memory.
    ///
    /// For a regular file (or a new name) the plaintext goes to a temporary file beside `output`, which
    /// is renamed over `output` only when everything verified; on failure it is removed and `output` is
    /// untouched. `-` (standard output) and an existing file that is not regular (a FIFO, a device, a
    /// link to one) are written in place as a stream (``OutputDestination``): each `stream-gcm` segment
    /// is verified before it is written, but a failure later leaves the verified part written.
    /// - Throws: ``AttacheError`` naming `input` (sealed-data and key errors) or `output` (write errors).
    package func unseal(fileAt input: String, to output: String) throws {
        do {
            let source = try FileSource(path: input)
            let destination = OutputDestination(path: output, stage: .seal)
            if scheme == .streamGCM, transferEncoding == .binary, destination.allowsPositionedWrites,
                try unsealInParallel(source, to: destination)
            {
                return
            }
            let reader = try unseal(source)
            try destination.write(reader)
        } catch let error as AttacheError {
            throw error.concerning(input)
        }
    }

    /// Opens an intact `stream-gcm` file on every core; false when it is not intact (nothing is left
    /// at `output` then), so that the sequential reader runs and names what is wrong.
    private func unsealInParallel(_ source: FileSource, to output: OutputDestination) throws -> Bool {
        struct NotIntact: Error {}
        do {
            try output.write { descriptor in
                guard try StreamGCMFiles.open(key: key, source: source, to: descriptor, outputPath: output.path) else {
                    throw NotIntact()
                }
            }
            return true
        } catch is NotIntact {
            return false
        }
    }
}

/// The counter block and expected ciphertext hash of a `matrix` attachment.
package struct MatrixOpeningValues: Sendable {
    /// The 16-byte AES-CTR counter block.
    package var iv: [UInt8]
    /// The ciphertext's SHA-256 (32 bytes).
    package var sha256: [UInt8]
}

extension ByteSource {
    /// Writes every byte of the source to `path` through a temporary file renamed into place, so a
    /// failure half-way never leaves a partial file under the final name; `-` (standard output) and an
    /// existing FIFO or device are written in place as a stream (``OutputDestination``).
    ///
    /// Blocking: call it from ``BlockingPool`` in async code.
    /// ```swift
    /// try await BlockingPool.shared.run { try payload.write(toFile: "video.sealed") }
    /// ```
    /// - Throws: ``AttacheError`` from reading the source, or `.fileUnwritable` naming `path`.
    package func write(toFile path: String) throws {
        try OutputDestination(path: path, stage: .seal).write(try makeReader())
    }
}

extension SealedPayload {
    /// Writes the sealed bytes to `path` like ``ByteSource/write(toFile:)`` (a temporary file renamed
    /// into place, or a stream for `-`, a FIFO or a device), and for binary `stream-gcm` of a file into
    /// a temporary file on every core (the bytes are the same as a reader's).
    ///
    /// Blocking: call it from ``BlockingPool`` in async code.
    /// ```swift
    /// let payload = try Sealer(scheme: .streamGCM, key: key).seal(try FileSource(path: "video.mp4"))
    /// try await BlockingPool.shared.run { try payload.write(toFile: "video.sealed") }
    /// ```
    /// - Throws: ``AttacheError`` from reading the plaintext (`.fileChanged` when the file is not what
    ///   its ``FileSource`` recorded), or `.fileUnwritable` naming `path`.
    package func write(toFile path: String) throws {
        let destination = OutputDestination(path: path, stage: .seal)
        guard case .streamGCM(let plan) = plan, transferEncoding == .binary, let file = plaintext as? FileSource,
            destination.allowsPositionedWrites
        else {
            return try destination.write(try makeReader())
        }
        try destination.write { descriptor in
            try StreamGCMFiles.seal(plan: plan, source: file, to: descriptor, outputPath: path)
        }
    }
}
