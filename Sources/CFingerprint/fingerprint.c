// The content guard's fast fingerprint: see include/attache_fingerprint.h.
//
// Each of eight lanes takes every eighth 16-byte word of the stream: lane = AESENC(lane ^ word, key).
// One AES round is a permutation of the lane for a fixed key, so a different word always gives a
// different lane, and the chain makes the value depend on the order of the words. The eight chains
// are independent, which keeps the AES unit busy despite each round's latency. At the end the lanes
// and the length go through several more rounds, so a change in any word reaches all 64 output bits.
// This detects accidental change (a file rewritten while it is read), not an adversary: whoever
// writes the file could simply write other bytes.

#include "attache_fingerprint.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

int attache_fingerprint_fast_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
}

void attache_fingerprint_fast_init(uint64_t state[16]) {
    // Distinct starting lanes (digits of the golden ratio and of pi, as in many hashes).
    static const uint64_t seeds[16] = {
        0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull,
        0x27D4EB2F165667C5ull, 0x94D049BB133111EBull, 0xBF58476D1CE4E5B9ull, 0xD6E8FEB86659FD93ull,
        0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull,
        0x452821E638D01377ull, 0xBE5466CF34E90C6Cull, 0xC0AC29B7C97C50DDull, 0x3F84D5B5B5470917ull,
    };
    memcpy(state, seeds, sizeof seeds);
}

__attribute__((target("aes,sse4.1"))) void attache_fingerprint_fast_blocks(
    uint64_t state[16], const unsigned char *bytes, size_t count) {
    const __m128i key = _mm_set_epi64x((long long)0x9FB21C651E98DF25ull, (long long)0x2545F4914F6CDD1Dull);
    __m128i l0 = _mm_loadu_si128((const __m128i *)(state + 0));
    __m128i l1 = _mm_loadu_si128((const __m128i *)(state + 2));
    __m128i l2 = _mm_loadu_si128((const __m128i *)(state + 4));
    __m128i l3 = _mm_loadu_si128((const __m128i *)(state + 6));
    __m128i l4 = _mm_loadu_si128((const __m128i *)(state + 8));
    __m128i l5 = _mm_loadu_si128((const __m128i *)(state + 10));
    __m128i l6 = _mm_loadu_si128((const __m128i *)(state + 12));
    __m128i l7 = _mm_loadu_si128((const __m128i *)(state + 14));
    for (size_t offset = 0; offset + 128 <= count; offset += 128) {
        const __m128i *block = (const __m128i *)(bytes + offset);
        l0 = _mm_aesenc_si128(_mm_xor_si128(l0, _mm_loadu_si128(block + 0)), key);
        l1 = _mm_aesenc_si128(_mm_xor_si128(l1, _mm_loadu_si128(block + 1)), key);
        l2 = _mm_aesenc_si128(_mm_xor_si128(l2, _mm_loadu_si128(block + 2)), key);
        l3 = _mm_aesenc_si128(_mm_xor_si128(l3, _mm_loadu_si128(block + 3)), key);
        l4 = _mm_aesenc_si128(_mm_xor_si128(l4, _mm_loadu_si128(block + 4)), key);
        l5 = _mm_aesenc_si128(_mm_xor_si128(l5, _mm_loadu_si128(block + 5)), key);
        l6 = _mm_aesenc_si128(_mm_xor_si128(l6, _mm_loadu_si128(block + 6)), key);
        l7 = _mm_aesenc_si128(_mm_xor_si128(l7, _mm_loadu_si128(block + 7)), key);
    }
    _mm_storeu_si128((__m128i *)(state + 0), l0);
    _mm_storeu_si128((__m128i *)(state + 2), l1);
    _mm_storeu_si128((__m128i *)(state + 4), l2);
    _mm_storeu_si128((__m128i *)(state + 6), l3);
    _mm_storeu_si128((__m128i *)(state + 8), l4);
    _mm_storeu_si128((__m128i *)(state + 10), l5);
    _mm_storeu_si128((__m128i *)(state + 12), l6);
    _mm_storeu_si128((__m128i *)(state + 14), l7);
}

__attribute__((target("aes,sse4.1"))) uint64_t attache_fingerprint_fast_value(
    const uint64_t state[16], uint64_t total) {
    const __m128i key = _mm_set_epi64x((long long)0xD6E8FEB86659FD93ull, (long long)0x94D049BB133111EBull);
    __m128i x = _mm_set_epi64x((long long)total, (long long)~total);
    for (int lane = 0; lane < 8; lane++) {
        x = _mm_aesenc_si128(_mm_xor_si128(x, _mm_loadu_si128((const __m128i *)(state + 2 * lane))), key);
        x = _mm_aesenc_si128(x, key);
    }
    x = _mm_aesenc_si128(x, key);
    x = _mm_aesenc_si128(x, key);
    x = _mm_aesenc_si128(x, key);
    return (uint64_t)_mm_cvtsi128_si64(x) ^ (uint64_t)_mm_extract_epi64(x, 1);
}

#else

int attache_fingerprint_fast_available(void) { return 0; }
void attache_fingerprint_fast_init(uint64_t state[16]) { memset(state, 0, 16 * sizeof(uint64_t)); }
void attache_fingerprint_fast_blocks(uint64_t state[16], const unsigned char *bytes, size_t count) {
    (void)state; (void)bytes; (void)count;
}
uint64_t attache_fingerprint_fast_value(const uint64_t state[16], uint64_t total) {
    (void)state; return total;
}

#endif
