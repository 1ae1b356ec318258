#ifndef ATTACHE_CLIBC_SHIM_H
#define ATTACHE_CLIBC_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/vfs.h>

// Linux's lease commands (<fcntl.h> declares them only under _GNU_SOURCE; the values are the kernel's ABI).
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif
#ifndef F_SETSIG
#define F_SETSIG 10
#endif
#include <sys/syscall.h>
#include <unistd.h>

// Swift's Glibc module imports neither <malloc.h>'s mallopt nor <sys/prctl.h>: typed wrappers for the
// one malloc setting the command-line tool changes and for naming threads.

/// Caps the number of glibc malloc arenas (M_ARENA_MAX); returns 1 on success.
static inline int attache_set_malloc_arena_limit(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

/// Names the calling thread (PR_SET_NAME; the kernel keeps 15 bytes); returns 0 on success.
static inline int attache_name_current_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/// Reserves the blocks of a file's first `length` bytes and sets its size (fallocate(2), mode 0), which
/// <fcntl.h> declares only under _GNU_SOURCE; unlike posix_fallocate it never falls back to writing
/// zeros. Returns 0, or -1 with errno (EOPNOTSUPP where the file system cannot).
static inline int attache_reserve_file_space(int fd, long long length) {
    return (int)syscall(SYS_fallocate, fd, 0, (long long)0, length);
}

/// The type of the file system holding the open file `fd` (statfs(2)'s f_type, a magic number such as
/// 0xEF53 for ext2/3/4), or 0 when fstatfs fails. Swift's Glibc module does not import <sys/vfs.h>.
static inline long long attache_file_system_type(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return 0;
    return (long long)info.f_type;
}

/// Asks the kernel whether any process has the file open for writing, by taking a read lease on `fd`
/// (opened read-only) and giving it back at once: F_SETLEASE with F_RDLCK fails with EAGAIN exactly
/// when the file is open for writing somewhere (a writable shared mapping keeps it so until unmapped).
/// Returns 1 when nobody has it open for writing, 0 when somebody does, -1 when the kernel cannot say
/// (leases disabled or unsupported by the file system, or a file this user does not own: EACCES).
///
/// A writer that opens the file in the microseconds the lease is held makes the kernel signal the
/// lease's holder; the signal is set to SIGURG first (F_SETSIG), whose default action is to ignore it,
/// instead of SIGIO, which would end the process. The writer waits until the lease is given back.
static inline int attache_probe_no_writers(int fd) {
    if (fcntl(fd, F_SETSIG, SIGURG) != 0) return -1;
    if (fcntl(fd, F_SETLEASE, F_RDLCK) != 0) return errno == EAGAIN ? 0 : -1;
    (void)fcntl(fd, F_SETLEASE, F_UNLCK);
    return 1;
}

#include <string.h>
#include <sys/socket.h>

/// Sends one byte with the open descriptor `fd` attached as SCM_RIGHTS ancillary data over the UNIX
/// socket `socket` (clamd's FILDES), with MSG_NOSIGNAL. Swift cannot use the CMSG_* macros that lay
/// out the control message. Returns what sendmsg(2) returns: 1, or -1 with errno.
static inline long attache_send_descriptor(int socket, int fd) {
    char byte = 0;
    struct iovec vector = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    return (long)sendmsg(socket, &message, MSG_NOSIGNAL);
}

#endif
