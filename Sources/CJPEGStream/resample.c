// AVX2 + FMA versions of the resampler's inner loops (see the header). Float throughout, like the Swift
// code they replace, so the filter and its accuracy are unchanged; only the summation order differs.

#include "attache_resample.h"

#if defined(__x86_64__)
#include <immintrin.h>

int attache_resample_available(void) {
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

__attribute__((target("avx2,fma"))) void attache_resample_horizontal1(
    const float *src, unsigned char *out, const float *weights, const intptr_t *starts, int taps, int width) {
    for (int x = 0; x < width; x++) {
        const float *s = src + starts[x];
        const float *w = weights + (size_t)x * (size_t)taps;
        __m256 sum8 = _mm256_setzero_ps();
        int k = 0;
        for (; k + 8 <= taps; k += 8) sum8 = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(s + k), sum8);
        __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(sum8), _mm256_extractf128_ps(sum8, 1));
        if (k < taps) sum4 = _mm_fmadd_ps(_mm_loadu_ps(w + k), _mm_loadu_ps(s + k), sum4);
        sum4 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
        sum4 = _mm_add_ss(sum4, _mm_movehdup_ps(sum4));
        out[x] = clamp_to_byte(_mm_cvtss_f32(sum4));
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

#else

int attache_resample_available(void) { return 0; }
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
