#ifndef ATTACHE_CLIBC_SHIM_H
#define ATTACHE_CLIBC_SHIM_H

#include <malloc.h>
#include <sys/prctl.h>
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

#endif
