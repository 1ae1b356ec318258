#ifndef ATTACHE_FINGERPRINT_H
#define ATTACHE_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "attache_crc32c.h"

// The content guard's fast fingerprint (Sources/AttacheCore/Support/ByteSource.swift): eight AES-round
// lanes over 128-byte blocks, when the CPU has AES-NI. The state is 16 64-bit words (eight 128-bit
// lanes). A process uses one method for both of its reads of a file, so the value never has to match
// the portable Swift fingerprint or another machine's.

// 1 when this CPU runs the AES-round fingerprint, 0 otherwise (the caller keeps its portable one).
int attache_fingerprint_fast_available(void);

// Sets the state to its starting value.
void attache_fingerprint_fast_init(uint64_t state[16]);

// Mixes `count` bytes into the state; `count` is a multiple of 128.
void attache_fingerprint_fast_blocks(uint64_t state[16], const unsigned char *bytes, size_t count);

// The 64-bit value of the state after `total` bytes (the tail past the last whole block already
// padded into one more block by the caller).
uint64_t attache_fingerprint_fast_value(const uint64_t state[16], uint64_t total);

#endif
