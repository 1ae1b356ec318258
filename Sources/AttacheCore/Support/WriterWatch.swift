import Glibc
internal import CLibc

/// Lets the kernel vouch that an open file's bytes did not change between two moments, so that the
/// content guard need not read the file a second time.
///
/// Every way of changing a file's bytes on a local Linux file system either sets its status-change time
/// (`ctime`) to the current time — `write`, `pwrite`, `O_DIRECT`, `truncate`, `fallocate`,
/// `copy_file_range`, the first write through a fresh shared mapping (`page_mkwrite`), `utimensat` — or
/// needs the file open for writing from before: a shared writable mapping made earlier can change pages
/// that are already writable without a fault, and so without a new `ctime`. And `ctime` cannot be set
/// back by any call.
///
/// So the watch holds when, at the start:
/// - the file is on a local file system whose timestamps and leases behave that way (ext2/3/4, XFS,
///   Btrfs, F2FS, tmpfs);
/// - its `ctime` is more than ``settleTime`` in the past, so a change from now on gets a later `ctime`
///   even with the kernel's coarse timestamp clock (a tick of 1–10 ms; 6.13 and later use fine-grained
///   stamps once a `ctime` has been read);
/// - nobody has it open for writing (a read lease can be taken: ``attache_probe_no_writers``);
///
/// and at the end nobody has it open for writing and its inode, size, `mtime` and `ctime` are those seen
/// at the start. Otherwise the guard reads the file again as before. Network and FUSE file systems (whose
/// writers may be on other machines), overlay file systems, files of another user (no lease) and files
/// changed in the last moments always take the second read.
struct WriterWatch {
    /// How long a file's last change must lie in the past for its `ctime` to be a reliable mark.
    static let settleTime: Int64 = 50_000_000

    /// `statfs` magic numbers of the file systems the watch trusts.
    static let trustedFileSystems: Set<Int64> = [
        0xEF53,  // ext2, ext3, ext4
        0x5846_5342,  // XFS
        0x9123_683E,  // Btrfs
        0xF2F5_2010,  // F2FS
        0x0102_1994,  // tmpfs
    ]

    private let node: FileNode
    private let size: Int64
    private let modification: timespec
    private let statusChange: timespec

    /// Starts watching the file open read-only as `descriptor`; nil when the kernel cannot vouch for it
    /// (see the type's description). `expectedSize` and `expectedModification` (nanoseconds since the
    /// epoch) are what the caller recorded before opening: a file that differs already is not watched.
    init?(descriptor: Int32, expectedSize: Int64, expectedModification: Int64) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        guard Int64(info.st_size) == expectedSize, Self.nanoseconds(info.st_mtim) == expectedModification else {
            return nil
        }
        guard Self.trustedFileSystems.contains(attache_file_system_type(descriptor)) else { return nil }
        var now = timespec()
        guard clock_gettime(CLOCK_REALTIME, &now) == 0 else { return nil }
        let age = Self.nanoseconds(now) - Self.nanoseconds(info.st_ctim)
        guard age >= Self.settleTime else { return nil }
        guard attache_probe_no_writers(descriptor) == 1 else { return nil }
        node = FileNode(info)
        size = Int64(info.st_size)
        modification = info.st_mtim
        statusChange = info.st_ctim
    }

    /// True when nobody has the file open for writing now and its inode, size, `mtime` and `ctime` are
    /// those seen at the start: its bytes are the ones it had then.
    func fileIsUnchanged(descriptor: Int32) -> Bool {
        guard attache_probe_no_writers(descriptor) == 1 else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return FileNode(info) == node && Int64(info.st_size) == size
            && Self.same(info.st_mtim, modification) && Self.same(info.st_ctim, statusChange)
    }

    private static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    private static func same(_ a: timespec, _ b: timespec) -> Bool {
        a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec
    }
}
