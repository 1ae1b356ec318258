// AVX2 + FMA versions of the resampler's inner loops (see the header). Float throughout, like the Swift
// code they replace, so the filter and its accuracy are unchanged; only the summation order differs.

#include "attache_resample.h"

#include <stdlib.h>
#include <string.h>

int attache_simd_disabled(void) {
    // ATTACHE_NO_SIMD=1 runs the portable code on a CPU that has AVX2, so tests can check it.
    const char *value = getenv("ATTACHE_NO_SIMD");
    return value != NULL && value[0] == '1';
}

#if defined(__x86_64__)
#include <immintrin.h>

int attache_resample_available(void) {
    if (attache_simd_disabled()) return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Four vectors of accumulators per sweep stay in registers across all taps, so each output value is
// stored once instead of being reloaded for every pair of rows.
__attribute__((target("avx2,fma"))) void attache_resample_vertical(
    float *acc, const float *const *rows, const float *weights, int taps, size_t count) {
    size_t x = 0;
    for (; x + 32 <= count; x += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        for (int k = 0; k < taps; k++) {
            const float *row = rows[k] + x;
            __m256 w = _mm256_broadcast_ss(weights + k);
            a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row), a0);
            a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 8), a1);
            a2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 16), a2);
            a3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 24), a3);
        }
        _mm256_storeu_ps(acc + x, a0);
        _mm256_storeu_ps(acc + x + 8, a1);
        _mm256_storeu_ps(acc + x + 16, a2);
        _mm256_storeu_ps(acc + x + 24, a3);
    }
    for (; x + 8 <= count; x += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (int k = 0; k < taps; k++) {
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(weights + k), _mm256_loadu_ps(rows[k] + x), a0);
        }
        _mm256_storeu_ps(acc + x, a0);
    }
    for (; x < count; x++) {
        float sum = 0;
        for (int k = 0; k < taps; k++) sum += weights[k] * rows[k][x];
        acc[x] = sum;
    }
}

static inline unsigned char clamp_to_byte(float value) {
    value += 0.5f;
    if (value < 0) value = 0;
    if (value > 255) value = 255;
    return (unsigned char)value;
}

__attribute__((target("avx2,fma"))) static inline __m256 dot_lanes(const float *s, const float *w, int taps) {
    __m256 sum8 = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= taps; k += 8) sum8 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(s + k), sum8);
    if (k < taps) {
        sum8 = _mm256_add_ps(sum8, _mm256_zextps128_ps256(_mm_mul_ps(_mm_loadu_ps(w + k), _mm_loadu_ps(s + k))));
    }
    return sum8;
}

// Four output pixels per step: their dot products are independent chains, and the four horizontal sums
// share two hadd steps instead of a shuffle sequence each.
__attribute__((target("avx2,fma"))) void attache_resample_horizontal1(
    const float *src, unsigned char *out, const float *weights, const intptr_t *starts, int taps, int width) {
    int x = 0;
    for (; x + 4 <= width; x += 4) {
        const float *w = weights + (size_t)x * (size_t)taps;
        __m256 d0 = dot_lanes(src + starts[x], w, taps);
        __m256 d1 = dot_lanes(src + starts[x + 1], w + taps, taps);
        __m256 d2 = dot_lanes(src + starts[x + 2], w + 2 * taps, taps);
        __m256 d3 = dot_lanes(src + starts[x + 3], w + 3 * taps, taps);
        __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(d0, d1), _mm256_hadd_ps(d2, d3));
        __m128 sums = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        __m128i values = _mm_cvtps_epi32(sums);  // round to nearest; packing saturates to 0...255
        __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(values, values), _mm_setzero_si128());
        int packed = _mm_cvtsi128_si32(bytes);
        memcpy(out + x, &packed, 4);
    }
    for (; x < width; x++) {
        const float *s = src + starts[x];
        const float *w = weights + (size_t)x * (size_t)taps;
        float sum = 0;
        for (int k = 0; k < taps; k++) sum += w[k] * s[k];
        out[x] = clamp_to_byte(sum);
    }
}

__attribute__((target("avx2"))) void attache_resample_widen(const unsigned char *src, float *dst, size_t count) {
    size_t x = 0;
    for (; x + 8 <= count; x += 8) {
        __m128i bytes = _mm_loadl_epi64((const __m128i *)(src + x));
        _mm256_storeu_ps(dst + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
    }
    for (; x < count; x++) dst[x] = (float)src[x];
}

// Eight pixels per step: their bytes are gathered per channel with byte shuffles (two overlapping
// loads for RGB), widened to 32-bit integers and converted.
__attribute__((target("avx2"))) void attache_resample_widen_planar(const unsigned char *src, float *dst,
                                                                   size_t width, int channels) {
    size_t x = 0;
    float *p0 = dst, *p1 = dst + width, *p2 = dst + 2 * width, *p3 = dst + 3 * width;
    if (channels == 3) {
        const __m128i r_lo = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m128i r_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m128i g_lo = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m128i g_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m128i b_lo = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1);
        for (; x + 8 <= width; x += 8) {
            __m128i lo = _mm_loadu_si128((const __m128i *)(src + x * 3));
            __m128i hi = _mm_loadu_si128((const __m128i *)(src + x * 3 + 8));
            __m128i r = _mm_or_si128(_mm_shuffle_epi8(lo, r_lo), _mm_shuffle_epi8(hi, r_hi));
            __m128i g = _mm_or_si128(_mm_shuffle_epi8(lo, g_lo), _mm_shuffle_epi8(hi, g_hi));
            __m128i b = _mm_or_si128(_mm_shuffle_epi8(lo, b_lo), _mm_shuffle_epi8(hi, b_hi));
            _mm256_storeu_ps(p0 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(r)));
            _mm256_storeu_ps(p1 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(g)));
            _mm256_storeu_ps(p2 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
        }
    } else if (channels == 4) {
        const __m256i group = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                               0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; x + 8 <= width; x += 8) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(src + x * 4));
            v = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, group), order);
            __m128i rg = _mm256_castsi256_si128(v), ba = _mm256_extracti128_si256(v, 1);
            _mm256_storeu_ps(p0 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(rg)));
            _mm256_storeu_ps(p1 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(rg, 8))));
            _mm256_storeu_ps(p2 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(ba)));
            _mm256_storeu_ps(p3 + x, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(ba, 8))));
        }
    }
    for (; x < width; x++) {
        for (int c = 0; c < channels; c++) dst[(size_t)c * width + x] = (float)src[x * (size_t)channels + (size_t)c];
    }
}

#else

int attache_resample_available(void) { return 0; }
void attache_resample_widen_planar(const unsigned char *src, float *dst, size_t width, int channels) {
    (void)src; (void)dst; (void)width; (void)channels;
}
void attache_resample_vertical(float *acc, const float *const *rows, const float *weights, int taps, size_t count) {
    (void)acc; (void)rows; (void)weights; (void)taps; (void)count;
}
void attache_resample_horizontal1(const float *src, unsigned char *out, const float *weights,
                                  const intptr_t *starts, int taps, int width) {
    (void)src; (void)out; (void)weights; (void)starts; (void)taps; (void)width;
}
void attache_resample_widen(const unsigned char *src, float *dst, size_t count) {
    (void)src; (void)dst; (void)count;
}

#endif

void attache_resample_interleave(const unsigned char *planes, unsigned char *out, size_t width, int channels) {
    for (size_t x = 0; x < width; x++) {
        for (int c = 0; c < channels; c++) out[x * (size_t)channels + (size_t)c] = planes[(size_t)c * width + x];
    }
}
