#ifndef ATTACHE_CLIBC_SHIM_H
#define ATTACHE_CLIBC_SHIM_H

#include <malloc.h>
#include <sys/prctl.h>

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

#endif
