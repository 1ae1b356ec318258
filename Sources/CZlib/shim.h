#ifndef ATTACHE_CZLIB_SHIM_H
#define ATTACHE_CZLIB_SHIM_H

#include <string.h>
#include <zlib.h>

// inflateInit2 is a macro (it passes ZLIB_VERSION and sizeof(z_stream)); wrapped for Swift. A raw
// DEFLATE stream (no zlib or gzip wrapper: negative window bits) with the largest window.
static inline int attache_inflate_init_raw(z_stream *stream) {
    memset(stream, 0, sizeof(*stream));
    return inflateInit2(stream, -MAX_WBITS);
}

#endif
