#ifndef ATTACHE_BASE64_H
#define ATTACHE_BASE64_H

#include <stddef.h>

/// Encodes the longest prefix of `input` that the vector path handles (a multiple of 3 bytes) into
/// `output` as base64 characters, and returns how many input bytes it consumed (output written:
/// consumed / 3 * 4). `url` selects RFC 4648 section 5's alphabet instead of section 4's. Returns 0
/// when the CPU has no AVX2, leaving all the work to the caller's scalar encoder.
size_t attache_base64_encode_prefix(const unsigned char *input, size_t count, unsigned char *output, int url);

/// Whether the vector path is available on this CPU (for tests and benchmark notes).
int attache_base64_has_vector_path(void);

#endif
