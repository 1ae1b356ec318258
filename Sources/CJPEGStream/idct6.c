// The 6×6 reduced inverse DCT (a 3/4-scale decode) in AVX2 + FMA. libjpeg-turbo has SIMD code for the
// full 8×8 transform only; its scalar 6×6 took about 15 % of a 12 MP photo's recompression.
//
// Same transform as libjpeg's accurate integer one: each 1-D pass computes
// x[n] = X[0] + Σ_{k=1..5} √2·cos((2n+1)kπ/12)·X[k] from the six lowest coefficients, the result is
// divided by 8 and centred on 128, exactly as for the 8×8 transform. In float instead of 13-bit fixed
// point, so a sample may differ from libjpeg's by one.

#include "attache_idct6.h"
#include "attache_resample.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>

#if defined(__x86_64__)
#include <immintrin.h>

static float basis[6][6];       // basis[n][k], first pass
static float basis_out[6][6];   // the same divided by 8, second pass
static pthread_once_t basis_once = PTHREAD_ONCE_INIT;

static void prepare_basis(void) {
    const double pi = 3.14159265358979323846;
    for (int n = 0; n < 6; n++) {
        for (int k = 0; k < 6; k++) {
            double value = k == 0 ? 1.0 : sqrt(2.0) * cos((2 * n + 1) * k * pi / 12.0);
            basis[n][k] = (float)value;
            basis_out[n][k] = (float)(value / 8.0);
        }
    }
}

__attribute__((target("avx2,fma"))) static inline void transpose8(__m256 *r) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

__attribute__((target("avx2,fma"))) static void idct_6x6(j_decompress_ptr cinfo, jpeg_component_info *compptr,
                                                         JCOEFPTR coef_block, JSAMPARRAY output_buf,
                                                         JDIMENSION output_col) {
    (void)cinfo;
    const UINT16 *quant = compptr->quant_table->quantval;
    __m256 in[6];
    for (int k = 0; k < 6; k++) {
        __m256i c = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(coef_block + 8 * k)));
        __m256i q = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(quant + 8 * k)));
        in[k] = _mm256_cvtepi32_ps(_mm256_mullo_epi32(c, q));
    }
    // Columns: row n of the intermediate, lanes = horizontal frequency.
    __m256 r[8];
    for (int n = 0; n < 6; n++) {
        __m256 sum = in[0];
        for (int k = 1; k < 6; k++) sum = _mm256_fmadd_ps(_mm256_set1_ps(basis[n][k]), in[k], sum);
        r[n] = sum;
    }
    r[6] = r[7] = _mm256_setzero_ps();
    transpose8(r);  // r[j]: lanes = row n, frequency j
    // Rows: output column m, lanes = row n.
    __m256 o[8];
    for (int m = 0; m < 6; m++) {
        __m256 sum = _mm256_mul_ps(_mm256_set1_ps(basis_out[m][0]), r[0]);
        for (int j = 1; j < 6; j++) sum = _mm256_fmadd_ps(_mm256_set1_ps(basis_out[m][j]), r[j], sum);
        o[m] = sum;
    }
    o[6] = o[7] = _mm256_setzero_ps();
    transpose8(o);  // o[n]: lanes = column m
    const __m256 centre = _mm256_set1_ps(128.0f);
    for (int n = 0; n < 6; n += 2) {
        __m256i a = _mm256_cvtps_epi32(_mm256_add_ps(o[n], centre));
        __m256i b = _mm256_cvtps_epi32(_mm256_add_ps(o[n + 1], centre));
        __m128i a16 = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        __m128i bytes = _mm_packus_epi16(a16, b16);
        unsigned char lanes[16];
        _mm_storeu_si128((__m128i *)lanes, bytes);
        memcpy(output_buf[n] + output_col, lanes, 6);
        memcpy(output_buf[n + 1] + output_col, lanes + 8, 6);
    }
}

attache_idct_method attache_idct6_method(void) {
    if (attache_simd_disabled()) return NULL;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
    pthread_once(&basis_once, prepare_basis);
    return idct_6x6;
}

#else

attache_idct_method attache_idct6_method(void) { return NULL; }

#endif
