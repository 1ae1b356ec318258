/// The two variants of the old iOS `NSData+AES256` category. INSECURE: no authentication, and a
/// fixed IV (V1) or ECB (V2) reveal repeated plaintext blocks. Kept only for old servers.
///
/// V1 (`legacy-cbc`): AES-256-CBC, IV of 16 zero bytes, PKCS#7, key = the passphrase's UTF-8 bytes
/// zero-padded or cut to 32. V2 (`legacy-ecb`): AES-128-ECB, PKCS#7, key = the first 16 bytes, zero-padded.
enum LegacyAES {
    static func sealedCount(forPlaintextCount n: Int64) -> Int64 { (n / 16 + 1) * 16 }

    static let chunkCount = 1 << 16

    /// Starts `cipher` with the legacy key rule for `scheme`.
    static func start(_ cipher: CipherContext, scheme: SealScheme, key: AttachmentKey, encrypt: Bool) throws {
        guard key.bytes.count > 0 else {
            throw AttacheError(.invalidKey, stage: .seal, "the legacy passphrase is empty")
        }
        let size = scheme == .legacyCBC ? 32 : 16
        let material = SecureBytes(zeroedCount: size)
        key.bytes.withUnsafeBytes { raw in
            material.mutableBytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[..<min(raw.count, size)]))
        }
        let zeroIV = [UInt8](repeating: 0, count: 16)
        try material.withUnsafeBytes { keyBytes in
            try zeroIV.withUnsafeBytes { iv in
                try cipher.start(
                    scheme == .legacyCBC ? .aes256CBC : .aes128ECB, encrypt: encrypt, key: keyBytes,
                    iv: scheme == .legacyCBC ? iv : nil)
            }
        }
    }
}

/// Encrypts or decrypts a legacy stream; the cipher's own PKCS#7 handling holds back the last block.
final class LegacyAESProducer: ChunkProducer {
    private let source: any ByteReader
    private let encrypt: Bool
    private let cipher: CipherContext
    private let input: UnsafeMutableRawBufferPointer
    /// Encrypting: the plaintext length still expected; decrypting: unused.
    private var remaining: Int64
    private var total: Int64 = 0
    private var done = false

    init(scheme: SealScheme, key: AttachmentKey, source: any ByteReader, encrypt: Bool, plaintextCount: Int64 = 0) throws {
        self.source = source
        self.encrypt = encrypt
        remaining = plaintextCount
        cipher = try CipherContext()
        input = .allocate(byteCount: LegacyAES.chunkCount, alignment: 16)
        try LegacyAES.start(cipher, scheme: scheme, key: key, encrypt: encrypt)
    }

    deinit { input.deallocate() }

    var maximumChunkSize: Int { LegacyAES.chunkCount + 32 }

    func produce(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while !done {
            let count: Int
            if encrypt {
                count = Int(min(remaining, Int64(input.count)))
                try source.readExactly(into: UnsafeMutableRawBufferPointer(rebasing: input[..<count]))
                remaining -= Int64(count)
                if remaining == 0 { try source.expectEnd() }
            } else {
                count = try source.readFully(into: input)
            }
            total += Int64(count)
            var n = count > 0 ? try cipher.update(input.baseAddress!, count: count, output: buffer.baseAddress!) : 0
            let atEnd = encrypt ? remaining == 0 : count < input.count
            if atEnd {
                if !encrypt, total == 0 || total % 16 != 0 {
                    throw AttacheError(
                        .sealedDataTruncated, stage: .seal, "the ciphertext is not a whole, non-zero number of blocks")
                }
                let final = cipher.finish(output: buffer.baseAddress! + n)
                guard final.ok else {
                    if encrypt { throw AttacheError.openSSL("EVP_CipherFinal_ex") }
                    throw AttacheError(
                        .sealedPaddingInvalid, stage: .seal,
                        "the PKCS#7 padding is malformed: wrong key or damaged data (this scheme cannot tell which)")
                }
                n += final.written
                done = true
            }
            if n > 0 { return n }
        }
        return 0
    }
}
