// PNG's five row filters undone in place (PNG specification, section 9). Debian's libpng is built without
// its SIMD filter code, and a photo saved as PNG spends a tenth of its decode in libpng's byte loops, so
// the 8-bit fast path unfilters here: SSE2 (part of every x86-64) one pixel at a time for 3- and 4-byte
// pixels, where each pixel depends on the one before it; plain loops otherwise. The result is the same
// bytes as libpng's, which the tests check for every filter, pixel size and width.

#include "attache_png_stream.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void unfilter_sub(unsigned char *row, size_t size, int bpp) {
    for (size_t i = (size_t)bpp; i < size; i++) row[i] = (unsigned char)(row[i] + row[i - (size_t)bpp]);
}

static void unfilter_up(unsigned char *row, const unsigned char *previous, size_t size) {
    for (size_t i = 0; i < size; i++) row[i] = (unsigned char)(row[i] + previous[i]);
}

static void unfilter_average(unsigned char *row, const unsigned char *previous, size_t size, int bpp) {
    size_t i = 0;
    for (; i < (size_t)bpp && i < size; i++) row[i] = (unsigned char)(row[i] + (previous[i] >> 1));
    for (; i < size; i++) row[i] = (unsigned char)(row[i] + ((row[i - (size_t)bpp] + previous[i]) >> 1));
}

static inline unsigned char paeth_predictor(int a, int b, int c) {
    int pa = b - c, pb = a - c, pc;
    pc = pa + pb;
    if (pa < 0) pa = -pa;
    if (pb < 0) pb = -pb;
    if (pc < 0) pc = -pc;
    if (pa <= pb && pa <= pc) return (unsigned char)a;
    return (unsigned char)(pb <= pc ? b : c);
}

static void unfilter_paeth(unsigned char *row, const unsigned char *previous, size_t size, int bpp) {
    size_t i = 0;
    // Left of the first pixel, a and c are zero: the predictor is b.
    for (; i < (size_t)bpp && i < size; i++) row[i] = (unsigned char)(row[i] + previous[i]);
    for (; i < size; i++) {
        row[i] = (unsigned char)(row[i] + paeth_predictor(row[i - (size_t)bpp], previous[i], previous[i - (size_t)bpp]));
    }
}

#if defined(__SSE2__)
// One pixel per step in the low lanes of a register, for 3- and 4-byte pixels. Four bytes are loaded at a
// time; for 3-byte pixels the fourth lane (the next pixel's first byte) is masked out of what is carried
// to the next pixel and never stored. The last pixel of a 3-byte row goes through the plain loop, so
// nothing past the row is read.
static inline __m128i load4(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
}

// Only the pixel's own bytes are stored: a 4-byte store would overlap the next pixel's load, which then
// waits for the store to complete instead of taking its bytes forwarded (3× slower for RGB rows).
static inline void store_pixel(unsigned char *p, __m128i v, int bpp) {
    int32_t w = _mm_cvtsi128_si32(v);
    if (bpp == 4) {
        memcpy(p, &w, 4);
    } else {
        memcpy(p, &w, 3);
    }
}

static inline __m128i pixel_mask(int bpp) { return _mm_cvtsi32_si128(bpp == 4 ? -1 : 0x00FFFFFF); }

// The bytes from `done` on, in plain C (the last pixel of a 3-byte row).
static size_t vector_end(size_t size, int bpp) { return size >= 4 ? (size - 4) / (size_t)bpp * (size_t)bpp + (bpp == 4 ? 4 : 0) : 0; }

static void unfilter_sub_sse2(unsigned char *row, size_t size, int bpp) {
    const __m128i mask = pixel_mask(bpp);
    size_t end = vector_end(size, bpp), i = 0;
    __m128i a = _mm_setzero_si128();
    for (; i < end; i += (size_t)bpp) {
        a = _mm_add_epi8(load4(row + i), _mm_and_si128(a, mask));
        store_pixel(row + i, a, bpp);
    }
    for (; i < size; i++) row[i] = (unsigned char)(row[i] + (i >= (size_t)bpp ? row[i - (size_t)bpp] : 0));
}

static void unfilter_average_sse2(unsigned char *row, const unsigned char *previous, size_t size, int bpp) {
    const __m128i one = _mm_set1_epi8(1), mask = pixel_mask(bpp);
    size_t end = vector_end(size, bpp), i = 0;
    __m128i a = _mm_setzero_si128();
    for (; i < end; i += (size_t)bpp) {
        __m128i b = load4(previous + i);
        a = _mm_and_si128(a, mask);
        // pavgb rounds up; the filter rounds down: subtract the carry of odd sums.
        __m128i average = _mm_sub_epi8(_mm_avg_epu8(a, b), _mm_and_si128(_mm_xor_si128(a, b), one));
        a = _mm_add_epi8(load4(row + i), _mm_and_si128(average, mask));
        store_pixel(row + i, a, bpp);
    }
    for (; i < size; i++) {
        int left = i >= (size_t)bpp ? row[i - (size_t)bpp] : 0;
        row[i] = (unsigned char)(row[i] + ((left + previous[i]) >> 1));
    }
}

static inline __m128i absolute16(__m128i x) { return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x)); }

static void unfilter_paeth_sse2(unsigned char *row, const unsigned char *previous, size_t size, int bpp) {
    const __m128i zero = _mm_setzero_si128(), all = _mm_set1_epi16(-1);
    const __m128i mask = _mm_unpacklo_epi8(pixel_mask(bpp), zero);
    size_t end = vector_end(size, bpp), i = 0;
    __m128i a = zero, c = zero; // 16-bit lanes
    for (; i < end; i += (size_t)bpp) {
        __m128i b = _mm_and_si128(_mm_unpacklo_epi8(load4(previous + i), zero), mask);
        __m128i x = _mm_unpacklo_epi8(load4(row + i), zero);
        __m128i pa = _mm_sub_epi16(b, c), pb = _mm_sub_epi16(a, c);
        __m128i pc = absolute16(_mm_add_epi16(pa, pb));
        pa = absolute16(pa);
        pb = absolute16(pb);
        // a when pa <= pb and pa <= pc, else b when pb <= pc, else c (the specification's order of ties).
        __m128i use_a = _mm_andnot_si128(_mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc)), all);
        __m128i use_b = _mm_andnot_si128(_mm_cmpgt_epi16(pb, pc), all);
        __m128i bc = _mm_or_si128(_mm_and_si128(use_b, b), _mm_andnot_si128(use_b, c));
        __m128i predictor = _mm_or_si128(_mm_and_si128(use_a, a), _mm_andnot_si128(use_a, bc));
        // Modulo 256; the masked lane keeps the next pixel's byte as it was (a, b, c are zero there).
        __m128i sum = _mm_add_epi16(x, predictor);
        store_pixel(row + i, _mm_packus_epi16(_mm_and_si128(sum, _mm_set1_epi16(0xFF)), zero), bpp);
        a = _mm_and_si128(sum, _mm_and_si128(mask, _mm_set1_epi16(0xFF)));
        c = b;
    }
    for (; i < size; i++) {
        if (i < (size_t)bpp) {
            row[i] = (unsigned char)(row[i] + previous[i]);
        } else {
            row[i] = (unsigned char)(row[i] + paeth_predictor(row[i - (size_t)bpp], previous[i], previous[i - (size_t)bpp]));
        }
    }
}
#endif

int attache_png_unfilter_row(unsigned char *row, const unsigned char *previous, size_t size, int bpp, int filter) {
    if (bpp < 1 || bpp > 8) return ATTACHE_PNG_ERROR;
    switch (filter) {
    case 0:
        return ATTACHE_PNG_OK;
    case 1:
#if defined(__SSE2__)
        if (bpp == 3 || bpp == 4) {
            unfilter_sub_sse2(row, size, bpp);
            return ATTACHE_PNG_OK;
        }
#endif
        unfilter_sub(row, size, bpp);
        return ATTACHE_PNG_OK;
    case 2:
        unfilter_up(row, previous, size);
        return ATTACHE_PNG_OK;
    case 3:
#if defined(__SSE2__)
        if (bpp == 3 || bpp == 4) {
            unfilter_average_sse2(row, previous, size, bpp);
            return ATTACHE_PNG_OK;
        }
#endif
        unfilter_average(row, previous, size, bpp);
        return ATTACHE_PNG_OK;
    case 4:
#if defined(__SSE2__)
        if (bpp == 3 || bpp == 4) {
            unfilter_paeth_sse2(row, previous, size, bpp);
            return ATTACHE_PNG_OK;
        }
#endif
        unfilter_paeth(row, previous, size, bpp);
        return ATTACHE_PNG_OK;
    default:
        return ATTACHE_PNG_ERROR;
    }
}

int attache_png_unfilter_row_scalar(unsigned char *row, const unsigned char *previous, size_t size, int bpp,
                                    int filter) {
    if (bpp < 1 || bpp > 8) return ATTACHE_PNG_ERROR;
    switch (filter) {
    case 0: return ATTACHE_PNG_OK;
    case 1: unfilter_sub(row, size, bpp); return ATTACHE_PNG_OK;
    case 2: unfilter_up(row, previous, size); return ATTACHE_PNG_OK;
    case 3: unfilter_average(row, previous, size, bpp); return ATTACHE_PNG_OK;
    case 4: unfilter_paeth(row, previous, size, bpp); return ATTACHE_PNG_OK;
    default: return ATTACHE_PNG_ERROR;
    }
}
