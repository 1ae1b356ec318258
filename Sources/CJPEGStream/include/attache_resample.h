// The two inner loops of the Transform stage's Lanczos resampler, in AVX2 + FMA with a runtime check.
// Swift compiles for the x86-64 baseline (SSE2, no FMA); these loops are most of the resampling time.

#ifndef ATTACHE_RESAMPLE_H
#define ATTACHE_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU runs the functions below; when it does not, they must not be called.
int attache_resample_available(void);

/// Nonzero when the environment variable ATTACHE_NO_SIMD is 1: every vector path of CJPEGStream is skipped.
int attache_simd_disabled(void);

/// acc[x] = Σ_k weights[k] · rows[k][x] for x in 0 ..< count, over `taps` rows.
void attache_resample_vertical(float *acc, const float *const *rows, const float *weights, int taps, size_t count);

/// One output row of a one-channel horizontal pass: out[x] = clamp(Σ_k weights[x·taps + k] · src[starts[x] + k]),
/// rounded to the nearest byte. `taps` is a multiple of 4.
void attache_resample_horizontal1(const float *src, unsigned char *out, const float *weights,
                                  const intptr_t *starts, int taps, int width);

/// Converts `count` bytes to floats.
void attache_resample_widen(const unsigned char *src, float *dst, size_t count);

/// Converts a row of `width` interleaved pixels of `channels` (3 or 4) bytes to floats, one plane after
/// the other: dst[c · width + x] = src[x · channels + c]. Planar rows let every channel go through the
/// one-channel horizontal loop.
void attache_resample_widen_planar(const unsigned char *src, float *dst, size_t width, int channels);

/// Interleaves `channels` byte planes of `width` samples each into packed pixels.
void attache_resample_interleave(const unsigned char *planes, unsigned char *out, size_t width, int channels);

#endif
