package import Glibc

/// A file as the kernel knows it: its device and inode, whatever name it is reached by.
package struct FileNode: Hashable, Sendable {
    package let device: UInt64
    package let inode: UInt64

    /// The node that `info` (from `stat`, `fstat` or `lstat`) describes.
    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
