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

// deflateInit2 is a macro too. A gzip stream (RFC 1952: window bits 15 + 16) at `level`, zlib's default
// memory level and strategy: the OTLP span export's `Content-Encoding: gzip`.
static inline int attache_deflate_init_gzip(z_stream *stream, int level) {
    memset(stream, 0, sizeof(*stream));
    return deflateInit2(stream, level, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY);
}

#endif
