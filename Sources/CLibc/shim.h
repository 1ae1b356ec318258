#ifndef ATTACHE_CLIBC_SHIM_H
#define ATTACHE_CLIBC_SHIM_H

#include <malloc.h>

// Swift's Glibc module does not import <malloc.h>'s mallopt: a typed wrapper for the one setting the
// command-line tool changes.

/// Caps the number of glibc malloc arenas (M_ARENA_MAX); returns 1 on success.
static inline int attache_set_malloc_arena_limit(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

#endif
