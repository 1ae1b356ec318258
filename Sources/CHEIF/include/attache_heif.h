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

/// Receives each row of the picture, top to bottom: `width` × 3 bytes of R, G, B, valid during the call.
typedef void (*attache_heif_row_sink)(void *context, const uint8_t *row);

/// Chooses how the opened image is decoded and says how its rows will come: `width` × `height`, to be
/// turned upright by the EXIF `orientation` (1–8) after resampling. A grid of HEVC tiles without alpha is
/// decoded here a row of tiles at a time with libavcodec (its first tile already, to learn how they are
/// coded), its orientation left to the caller; anything else by libheif, whole and upright (orientation
/// 1): with its decoder `decoder` (a plugin's `id_name`: "libde265", "attache-avcodec") when not NULL,
/// and always when `libheif_decodes` is non-zero. ATTACHE_HEIF_UNSUPPORTED when libheif cannot choose
/// its decoder (before 1.13).
int attache_heif_plan(struct attache_heif_image *image, const char *decoder, int libheif_decodes, int *width,
                      int *height, int *orientation, char *error, size_t error_size);

/// Decodes the image as planned, alpha composited on white, and hands its rows to `sink` as 8-bit RGB.
int attache_heif_decode_rows(struct attache_heif_image *image, attache_heif_row_sink sink, void *context,
                             char *error, size_t error_size);

/// The `id_name` of the HEVC decoder libheif picks ("attache-avcodec" when libavcodec could be loaded,
/// "libde265" otherwise), or NULL when libheif cannot be loaded or not tell.
const char *attache_heif_hevc_decoder(void);

/// How many pictures FFmpeg's decoder has decoded on the calling thread (a test's check of which ran).
unsigned long attache_heif_avcodec_pictures(void);

/// How many grids have been decoded tile by tile on the calling thread.
unsigned long attache_heif_tiled_grids(void);

/// Frees the handle.
void attache_heif_close(struct attache_heif_image *image);

/// libheif's version, or NULL when it cannot be loaded.
const char *attache_heif_version(void);

#endif
