#ifndef ATTACHE_HEIF_H
#define ATTACHE_HEIF_H

#include <stddef.h>
#include <stdint.h>

// HEIC/HEIF/AVIF decoding through libheif, loaded with dlopen on first use: libheif pulls in libde265,
// libx265, libaom and dav1d, whose mapping costs every start 6 ms of CPU for the rare photo that needs
// them (Package.swift has the measurement), and a machine without libheif still runs the rest.
// When FFmpeg's libavcodec.so.59 can be loaded too, it decodes the HEVC pictures inside libheif (a decoder
// plugin, heif_avcodec.c), for less CPU than libde265; otherwise libde265 does, as libheif ships.

/// Results of the calls below.
enum attache_heif_status {
    ATTACHE_HEIF_OK = 0,
    /// The file is damaged or not HEIF.
    ATTACHE_HEIF_CORRUPT = 1,
    /// Over the pixel limit (checked from the header, before decoding).
    ATTACHE_HEIF_LIMIT = 2,
    /// libheif.so.1 is not installed (or lacks a function).
    ATTACHE_HEIF_UNAVAILABLE = 3,
    /// libheif has no decoder for this variant, or another library failure.
    ATTACHE_HEIF_UNSUPPORTED = 4,
    ATTACHE_HEIF_NO_MEMORY = 5,
};

struct attache_heif_image;

/// Reads the primary image's header from `data` (which must outlive the handle) and reports its size as
/// displayed (rotation and mirroring applied). `error` receives libheif's message on failure.
int attache_heif_open(const uint8_t *data, size_t size, long long pixel_limit, struct attache_heif_image **image,
                      int *width, int *height, char *error, size_t error_size);

/// Decodes the image (orientation applied, alpha composited on white) into `bmp`: a 54-byte BMP header
/// and top-down 24-bit BGR rows padded to 4 bytes, exactly `attache_heif_bmp_size(width, height)` bytes.
int attache_heif_decode_bmp(struct attache_heif_image *image, uint8_t *bmp, size_t bmp_size, char *error,
                            size_t error_size);

/// The same with libheif's decoder `decoder` (a plugin's `id_name`: "libde265", "attache-avcodec"), or the
/// one libheif prefers when NULL. ATTACHE_HEIF_UNSUPPORTED when libheif cannot choose (before 1.13).
int attache_heif_decode_bmp_using(struct attache_heif_image *image, const char *decoder, uint8_t *bmp,
                                  size_t bmp_size, char *error, size_t error_size);

/// The `id_name` of the HEVC decoder libheif picks ("attache-avcodec" when libavcodec could be loaded,
/// "libde265" otherwise), or NULL when libheif cannot be loaded or not tell.
const char *attache_heif_hevc_decoder(void);

/// How many pictures FFmpeg's decoder has decoded on the calling thread (a test's check of which ran).
unsigned long attache_heif_avcodec_pictures(void);

/// Frees the handle.
void attache_heif_close(struct attache_heif_image *image);

/// The size of the BMP `attache_heif_decode_bmp` writes for a picture of this size.
size_t attache_heif_bmp_size(int width, int height);

/// libheif's version, or NULL when it cannot be loaded.
const char *attache_heif_version(void);

#endif
