import Foundation

/// Files for scanning tests, each with the signature ``ClamdProcess/shared()`` reports for it (nil:
/// clean): the EICAR string as a plain file, inside a zip, a tar and a PDF; clamav-testfiles' `clam.exe`
/// and archives holding it; the test's own hashed sample; and clean files of several kinds.
package struct ScanSample: Sendable {
    /// The file.
    package let path: String
    /// The signature clamd names for it, or nil when it is clean.
    package let signature: String?

    /// The ten infected samples and `clean` clean ones, written under `folder`.
    package static func make(in folder: ScratchFolder, clean: Int = 10) throws -> [ScanSample] {
        let eicar = ClamdProcess.eicar
        let eicarName = "Attache.Test.EICAR.UNOFFICIAL"
        let clamName = "Attache.Test.ClamExe.UNOFFICIAL"
        var samples: [ScanSample] = []
        samples.append(ScanSample(path: try folder.write("infected/eicar.txt", eicar), signature: eicarName))
        let pdf = Array("%PDF-1.4\n1 0 obj << /Length 68 >>\nstream\n".utf8) + eicar
            + Array("\nendstream\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n".utf8)
        samples.append(ScanSample(path: try folder.write("infected/report.pdf", pdf), signature: eicarName))
        let inner = try folder.write("work/eicar.com", eicar)
        let zip = folder.path + "/infected/archive.zip"
        let tar = folder.path + "/infected/bundle.tar"
        _ = try run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sys, zipfile, tarfile\n"
                    + "with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as z: z.write(sys.argv[1], 'readme.com')\n"
                    + "with tarfile.open(sys.argv[3], 'w') as t: t.add(sys.argv[1], 'docs/readme.com')\n",
                inner, zip, tar,
            ])
        samples.append(ScanSample(path: zip, signature: eicarName))
        samples.append(ScanSample(path: tar, signature: eicarName))
        for name in ["clam.exe", "clam.zip", "clam.7z", "clam.cab", "clam.tar.gz"] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: ClamdProcess.testFilesFolder + "/" + name))
            samples.append(ScanSample(path: try folder.write("infected/" + name, Array(bytes)), signature: clamName))
        }
        samples.append(
            ScanSample(path: try folder.write("infected/own.bin", ClamdProcess.ownSample), signature: "Attache.Test.Own.UNOFFICIAL"))
        for index in 0..<clean {
            let body: [UInt8]
            switch index % 4 {
            case 0: body = Array("plain text file \(index)\n".utf8)
            case 1: body = (0..<(1000 + index * 37)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            case 2: body = Array("%PDF-1.4\n% clean \(index)\n%%EOF\n".utf8)
            default: body = Array(repeating: UInt8(index & 0xFF), count: 100 + index)
            }
            samples.append(ScanSample(path: try folder.write("clean/file-\(index).bin", body), signature: nil))
        }
        return samples
    }
}
