#ifndef ATTACHE_HEIF_AVCODEC_H
#define ATTACHE_HEIF_AVCODEC_H

// Private to CHEIF: a libheif decoder plugin that decodes HEVC with FFmpeg's libavcodec, both loaded with
// dlopen. libheif keeps the container, grid tiles, transformations, alpha and colour conversion.

#include <libheif/heif.h>
#include <libheif/heif_plugin.h>

/// The libheif functions the plugin calls (resolved by heif.c from the libheif it loaded).
struct attache_heif_plugin_api {
    struct heif_error (*image_create)(int, int, enum heif_colorspace, enum heif_chroma, struct heif_image **);
    struct heif_error (*image_add_plane)(struct heif_image *, enum heif_channel, int, int, int);
    uint8_t *(*image_get_plane)(struct heif_image *, enum heif_channel, int *);
    void (*image_release)(const struct heif_image *);
    struct heif_color_profile_nclx *(*nclx_alloc)(void);
    void (*nclx_free)(struct heif_color_profile_nclx *);
    struct heif_error (*nclx_set_primaries)(struct heif_color_profile_nclx *, uint16_t);
    struct heif_error (*nclx_set_transfer)(struct heif_color_profile_nclx *, uint16_t);
    struct heif_error (*nclx_set_matrix)(struct heif_color_profile_nclx *, uint16_t);
    struct heif_error (*image_set_nclx)(struct heif_image *, const struct heif_color_profile_nclx *);
};

/// Looks `name` up in `library` (a dlopen handle) and stores its address in `*field`, a function-pointer
/// field; -1 when the library has no such symbol. Shared by heif.c and heif_avcodec.c.
int attache_heif_resolve(void *library, const char *name, void *field);

/// The plugin's `id_name` (what `heif_decoding_options.decoder_id` selects).
#define ATTACHE_AVCODEC_PLUGIN_ID "attache-avcodec"

/// How many pictures the plugin has decoded on the calling thread (tests: which decoder ran).
extern _Thread_local unsigned long attache_avcodec_pictures;

/// Loads libavcodec and libavutil (libavcodec.so.59 and libavutil.so.57 with FFmpeg 5.1's headers) and returns the plugin, or NULL when they cannot be loaded,
/// lack a function or have no HEVC decoder. Call once (heif.c calls it under its pthread_once).
const struct heif_decoder_plugin *attache_avcodec_hevc_plugin(const struct attache_heif_plugin_api *api);

/// Whether the plugin's libavcodec could be loaded (after `attache_avcodec_hevc_plugin`).
int attache_avcodec_available(void);

/// One picture decoded by libavcodec: YCbCr (`components` 3) or grey (1) planes of `depth` bits (over 8:
/// 16-bit native-endian words), chroma subsampled by 2^shift_x across and 2^shift_y down.
struct attache_avcodec_picture {
    void *frame;  // the AVFrame that owns the planes
    const uint8_t *planes[3];
    int strides[3];
    int width, height, components, depth, shift_x, shift_y;
    /// The stream's colour description (H.273 matrix_coefficients, 2 when unspecified, and the range).
    int matrix, full_range;
};

/// Decodes the HEVC item `data` (NAL units, each after a length as `hvcc` says) with the parameter sets of
/// its hvcC box's body `hvcc`, on the calling thread. Free the picture with `attache_avcodec_picture_free`.
struct heif_error attache_avcodec_decode_item(const uint8_t *hvcc, size_t hvcc_size, const uint8_t *data,
                                              size_t size, struct attache_avcodec_picture *picture);

void attache_avcodec_picture_free(struct attache_avcodec_picture *picture);

#endif
