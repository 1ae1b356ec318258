// Vectorised base64 encoding for the Seal stage's transfer encoding.
//
// Each 128-bit lane turns 12 input bytes into 16 characters: a byte shuffle spreads every 3-byte group
// over a 32-bit word, two multiplies move its four 6-bit fields into separate bytes, and a 16-entry
// table adds the offset of each field's alphabet range ('A', 'a', '0', and the two symbols).
// docs/FORMAT.md explains the choice. The scalar tail and the padding stay in Swift.

#include "attache_base64.h"

#include <stdlib.h>

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static size_t encode_avx2(
    const unsigned char *input, size_t count, unsigned char *output, int url) {
    // Per lane: bytes a b c of each group become the word [b a c b], so that each 16-bit half holds
    // two whole 6-bit fields at known positions.
    const __m256i spread = _mm256_setr_epi8(
        1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
        1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    // Fields 0 and 2 shifted down by a high multiply, fields 1 and 3 up by a low one.
    const __m256i maskHigh = _mm256_set1_epi32(0x0FC0FC00);
    const __m256i shiftHigh = _mm256_set1_epi32(0x04000040);
    const __m256i maskLow = _mm256_set1_epi32(0x003F03F0);
    const __m256i shiftLow = _mm256_set1_epi32(0x01000010);
    // Range number of a field value: 0 for 0-25, 1 for 26-51, 2-11 for the digits, 12 and 13 for the
    // two symbols; the table holds what to add to the value to get its character.
    const __m256i fiftyOne = _mm256_set1_epi8(51);
    const __m256i twentyFive = _mm256_set1_epi8(25);
    const signed char plus = url ? ('-' - 62) : ('+' - 62);
    const signed char slash = url ? ('_' - 63) : ('/' - 63);
    const __m256i offsets = _mm256_setr_epi8(
        'A', 'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
        '0' - 52, '0' - 52, plus, slash, 0, 0,
        'A', 'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
        '0' - 52, '0' - 52, plus, slash, 0, 0);

    size_t i = 0;
    size_t o = 0;
    // Each 16-byte load uses 12 bytes, so the last one may read 4 bytes past the 24 consumed: stop
    // while those 4 bytes are still inside the input.
    while (i + 28 <= count) {
        __m256i in = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(input + i))),
            _mm_loadu_si128((const __m128i *)(input + i + 12)), 1);
        in = _mm256_shuffle_epi8(in, spread);
        __m256i high = _mm256_mulhi_epu16(_mm256_and_si256(in, maskHigh), shiftHigh);
        __m256i low = _mm256_mullo_epi16(_mm256_and_si256(in, maskLow), shiftLow);
        __m256i values = _mm256_or_si256(high, low);
        __m256i range = _mm256_subs_epu8(values, fiftyOne);
        range = _mm256_sub_epi8(range, _mm256_cmpgt_epi8(values, twentyFive));
        __m256i text = _mm256_add_epi8(values, _mm256_shuffle_epi8(offsets, range));
        _mm256_storeu_si256((__m256i *)(output + o), text);
        i += 24;
        o += 32;
    }
    return i;
}

static int cpu_has_avx2(void) {
    static int cached = -1;
    // A benign race: every thread computes the same answer.
    int value = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (value < 0) {
        // ATTACHE_NO_SIMD=1 runs the portable code on a CPU that has AVX2, so tests can check it.
        const char *off = getenv("ATTACHE_NO_SIMD");
        __builtin_cpu_init();
        value = (off == NULL || off[0] != '1') && __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&cached, value, __ATOMIC_RELAXED);
    }
    return value;
}

size_t attache_base64_encode_prefix(const unsigned char *input, size_t count, unsigned char *output, int url) {
    return cpu_has_avx2() ? encode_avx2(input, count, output, url) : 0;
}

int attache_base64_has_vector_path(void) { return cpu_has_avx2(); }

#else

size_t attache_base64_encode_prefix(const unsigned char *input, size_t count, unsigned char *output, int url) {
    (void)input; (void)count; (void)output; (void)url;
    return 0;
}

int attache_base64_has_vector_path(void) { return 0; }

#endif
