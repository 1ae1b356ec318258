#ifndef ATTACHE_CRC32C_H
#define ATTACHE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

// CRC-32C with the CPU's own instruction (SSE 4.2's crc32, three runs side by side), for S3's part checksums
// (Sources/Attache/ObjectStore/CRC32C.swift, which keeps a portable table method for other CPUs).

// 1 when this CPU has the instruction, 0 otherwise.
int attache_crc32c_hardware_available(void);

// The register after `count` more bytes, from `state` (no inversion on either side: the caller starts
// from 0xFFFFFFFF and inverts the result). Call only when attache_crc32c_hardware_available() is 1.
uint32_t attache_crc32c_hardware_update(uint32_t state, const unsigned char *bytes, size_t count);

#endif
