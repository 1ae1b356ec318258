#include "attache_heif.h"
#include "heif_avcodec.h"

#include <dlfcn.h>
#include <libheif/heif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char library_name[] = "libheif.so.1";

static struct {
    const char *(*get_version)(void);
    struct heif_context *(*context_alloc)(void);
    void (*context_free)(struct heif_context *);
    struct heif_error (*read_from_memory_without_copy)(struct heif_context *, const void *, size_t,
                                                       const struct heif_reading_options *);
    struct heif_error (*get_primary_image_handle)(struct heif_context *, struct heif_image_handle **);
    void (*handle_release)(const struct heif_image_handle *);
    int (*handle_get_width)(const struct heif_image_handle *);
    int (*handle_get_height)(const struct heif_image_handle *);
    int (*handle_has_alpha)(const struct heif_image_handle *);
    struct heif_error (*decode_image)(const struct heif_image_handle *, struct heif_image **, enum heif_colorspace,
                                      enum heif_chroma, const struct heif_decoding_options *);
    const uint8_t *(*get_plane_readonly)(const struct heif_image *, enum heif_channel, int *);
    int (*image_get_width)(const struct heif_image *, enum heif_channel);
    int (*image_get_height)(const struct heif_image *, enum heif_channel);
    void (*image_release)(const struct heif_image *);
    void (*set_maximum_image_size_limit)(struct heif_context *, int);
    // Optional, NULL when missing.
    struct heif_decoding_options *(*decoding_options_alloc)(void);
    void (*decoding_options_free)(struct heif_decoding_options *);
    struct heif_error (*register_decoder_plugin)(const struct heif_decoder_plugin *);
    int (*handle_get_luma_bits)(const struct heif_image_handle *);
    int (*handle_get_chroma_bits)(const struct heif_image_handle *);
    int (*image_get_bits_per_pixel_range)(const struct heif_image *, enum heif_channel);
    int (*get_decoder_descriptors)(enum heif_compression_format, const struct heif_decoder_descriptor **, int);
    const char *(*decoder_descriptor_get_id_name)(const struct heif_decoder_descriptor *);
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded = 0;

int attache_heif_resolve(void *library, const char *name, void *field) {
    void *address = dlsym(library, name);
    if (address == NULL) return -1;
    memcpy(field, &address, sizeof address);
    return 0;
}

// HEVC decoded by FFmpeg's libavcodec when it can be loaded (less CPU than libde265 for the same pixels,
// docs/BENCHMARKS.md): a decoder plugin of a higher priority than libde265's, registered once, before the
// first decode. libheif keeps doing everything else. Without libavcodec, libde265 decodes as before.
static void register_avcodec(void *library) {
    struct attache_heif_plugin_api plugin_api;
    if (attache_heif_resolve(library, "heif_register_decoder_plugin", &api.register_decoder_plugin) != 0
        || attache_heif_resolve(library, "heif_image_create", &plugin_api.image_create) != 0
        || attache_heif_resolve(library, "heif_image_add_plane", &plugin_api.image_add_plane) != 0
        || attache_heif_resolve(library, "heif_image_get_plane", &plugin_api.image_get_plane) != 0
        || attache_heif_resolve(library, "heif_image_release", &plugin_api.image_release) != 0
        || attache_heif_resolve(library, "heif_nclx_color_profile_alloc", &plugin_api.nclx_alloc) != 0
        || attache_heif_resolve(library, "heif_nclx_color_profile_free", &plugin_api.nclx_free) != 0
        || attache_heif_resolve(library, "heif_nclx_color_profile_set_color_primaries", &plugin_api.nclx_set_primaries) != 0
        || attache_heif_resolve(library, "heif_nclx_color_profile_set_transfer_characteristics", &plugin_api.nclx_set_transfer) != 0
        || attache_heif_resolve(library, "heif_nclx_color_profile_set_matrix_coefficients", &plugin_api.nclx_set_matrix) != 0
        || attache_heif_resolve(library, "heif_image_set_nclx_color_profile", &plugin_api.image_set_nclx) != 0)
        return;
    const struct heif_decoder_plugin *plugin = attache_avcodec_hevc_plugin(&plugin_api);
    if (plugin != NULL) api.register_decoder_plugin(plugin);
}

static void load(void) {
    void *library = dlopen(library_name, RTLD_LAZY | RTLD_LOCAL);
    if (library == NULL) return;
    if (attache_heif_resolve(library, "heif_get_version", &api.get_version) != 0
        || attache_heif_resolve(library, "heif_context_alloc", &api.context_alloc) != 0
        || attache_heif_resolve(library, "heif_context_free", &api.context_free) != 0
        || attache_heif_resolve(library, "heif_context_read_from_memory_without_copy", &api.read_from_memory_without_copy) != 0
        || attache_heif_resolve(library, "heif_context_get_primary_image_handle", &api.get_primary_image_handle) != 0
        || attache_heif_resolve(library, "heif_image_handle_release", &api.handle_release) != 0
        || attache_heif_resolve(library, "heif_image_handle_get_width", &api.handle_get_width) != 0
        || attache_heif_resolve(library, "heif_image_handle_get_height", &api.handle_get_height) != 0
        || attache_heif_resolve(library, "heif_image_handle_has_alpha_channel", &api.handle_has_alpha) != 0
        || attache_heif_resolve(library, "heif_decode_image", &api.decode_image) != 0
        || attache_heif_resolve(library, "heif_image_get_plane_readonly", &api.get_plane_readonly) != 0
        || attache_heif_resolve(library, "heif_image_get_width", &api.image_get_width) != 0
        || attache_heif_resolve(library, "heif_image_get_height", &api.image_get_height) != 0
        || attache_heif_resolve(library, "heif_image_release", &api.image_release) != 0
        || attache_heif_resolve(library, "heif_context_set_maximum_image_size_limit", &api.set_maximum_image_size_limit) != 0) {
        dlclose(library);
        return;
    }
    // Optional (libheif 1.13 and later): choosing a decoder by name, listing the HEVC decoders.
    if (attache_heif_resolve(library, "heif_decoding_options_alloc", &api.decoding_options_alloc) != 0
        || attache_heif_resolve(library, "heif_decoding_options_free", &api.decoding_options_free) != 0)
        api.decoding_options_alloc = NULL;
    if (attache_heif_resolve(library, "heif_get_decoder_descriptors", &api.get_decoder_descriptors) != 0
        || attache_heif_resolve(library, "heif_decoder_descriptor_get_id_name", &api.decoder_descriptor_get_id_name) != 0)
        api.get_decoder_descriptors = NULL;
    if (attache_heif_resolve(library, "heif_image_handle_get_luma_bits_per_pixel", &api.handle_get_luma_bits) != 0
        || attache_heif_resolve(library, "heif_image_handle_get_chroma_bits_per_pixel", &api.handle_get_chroma_bits) != 0
        || attache_heif_resolve(library, "heif_image_get_bits_per_pixel_range", &api.image_get_bits_per_pixel_range) != 0)
        api.handle_get_luma_bits = NULL;
    loaded = 1;
    register_avcodec(library);
}


static int available(char *error, size_t error_size) {
    pthread_once(&load_once, load);
    if (!loaded) snprintf(error, error_size, "%s cannot be loaded", library_name);
    return loaded;
}

const char *attache_heif_version(void) {
    char ignored[8];
    return available(ignored, sizeof ignored) ? api.get_version() : NULL;
}

const char *attache_heif_hevc_decoder(void) {
    char ignored[8];
    if (!available(ignored, sizeof ignored) || api.get_decoder_descriptors == NULL) return NULL;
    const struct heif_decoder_descriptor *first = NULL;
    // Sorted by priority: the first is the one libheif picks.
    if (api.get_decoder_descriptors(heif_compression_HEVC, &first, 1) < 1 || first == NULL) return NULL;
    return api.decoder_descriptor_get_id_name(first);
}

unsigned long attache_heif_avcodec_pictures(void) { return attache_avcodec_pictures; }

struct attache_heif_image {
    struct heif_context *context;
    struct heif_image_handle *handle;
    int width, height, has_alpha;
};

static int status_for(struct heif_error error) {
    switch (error.code) {
    case heif_error_Ok: return ATTACHE_HEIF_OK;
    case heif_error_Memory_allocation_error: return ATTACHE_HEIF_NO_MEMORY;
    case heif_error_Unsupported_feature:
    case heif_error_Unsupported_filetype:
    case heif_error_Decoder_plugin_error: return ATTACHE_HEIF_UNSUPPORTED;
    default: return error.subcode == heif_suberror_Security_limit_exceeded ? ATTACHE_HEIF_LIMIT : ATTACHE_HEIF_CORRUPT;
    }
}

static void copy_message(struct heif_error error, char *out, size_t size) {
    snprintf(out, size, "%s", error.message != NULL ? error.message : "libheif failed");
}

void attache_heif_close(struct attache_heif_image *image) {
    if (image == NULL) return;
    if (image->handle != NULL) api.handle_release(image->handle);
    if (image->context != NULL) api.context_free(image->context);
    free(image);
}

int attache_heif_open(const uint8_t *data, size_t size, long long pixel_limit, struct attache_heif_image **out,
                      int *width, int *height, char *error, size_t error_size) {
    *out = NULL;
    if (!available(error, error_size)) return ATTACHE_HEIF_UNAVAILABLE;
    struct attache_heif_image *image = calloc(1, sizeof *image);
    if (image == NULL) return ATTACHE_HEIF_NO_MEMORY;
    image->context = api.context_alloc();
    if (image->context == NULL) {
        free(image);
        return ATTACHE_HEIF_NO_MEMORY;
    }
    // libheif's own cap on a side (its default is 32768 × 32768 pixels in total); ours is checked below.
    api.set_maximum_image_size_limit(image->context, 65535);
    struct heif_error result = api.read_from_memory_without_copy(image->context, data, size, NULL);
    if (result.code == heif_error_Ok) result = api.get_primary_image_handle(image->context, &image->handle);
    if (result.code != heif_error_Ok) {
        copy_message(result, error, error_size);
        attache_heif_close(image);
        return status_for(result);
    }
    image->width = api.handle_get_width(image->handle);
    image->height = api.handle_get_height(image->handle);
    image->has_alpha = api.handle_has_alpha(image->handle);
    if (image->width <= 0 || image->height <= 0) {
        snprintf(error, error_size, "the image declares no pixels");
        attache_heif_close(image);
        return ATTACHE_HEIF_CORRUPT;
    }
    if ((long long)image->width * image->height > pixel_limit) {
        snprintf(error, error_size, "the image is %d×%d, over the limit of %lld pixels", image->width, image->height,
                 pixel_limit);
        attache_heif_close(image);
        return ATTACHE_HEIF_LIMIT;
    }
    *width = image->width;
    *height = image->height;
    *out = image;
    return ATTACHE_HEIF_OK;
}

size_t attache_heif_bmp_size(int width, int height) {
    size_t row = ((size_t)width * 3 + 3) & ~(size_t)3;
    return 54 + row * (size_t)height;
}

static void put16(uint8_t *at, unsigned value) {
    at[0] = (uint8_t)value;
    at[1] = (uint8_t)(value >> 8);
}

static void put32(uint8_t *at, uint32_t value) {
    put16(at, value & 0xFFFF);
    put16(at + 2, value >> 16);
}

int attache_heif_decode_bmp(struct attache_heif_image *image, uint8_t *bmp, size_t bmp_size, char *error,
                            size_t error_size) {
    return attache_heif_decode_bmp_using(image, NULL, bmp, bmp_size, error, error_size);
}

int attache_heif_decode_bmp_using(struct attache_heif_image *image, const char *decoder, uint8_t *bmp,
                                  size_t bmp_size, char *error, size_t error_size) {
    size_t needed = attache_heif_bmp_size(image->width, image->height);
    if (bmp_size < needed) {
        snprintf(error, error_size, "the output buffer is too small");
        return ATTACHE_HEIF_NO_MEMORY;
    }
    // Default decoding options: the `irot`, `imir` and `clap` transformations are applied.
    struct heif_decoding_options *options = NULL;
    if (decoder != NULL) {
        if (api.decoding_options_alloc == NULL || (options = api.decoding_options_alloc()) == NULL
            || options->version < 4) {
            if (options != NULL) api.decoding_options_free(options);
            snprintf(error, error_size, "this libheif cannot choose its decoder");
            return ATTACHE_HEIF_UNSUPPORTED;
        }
        options->decoder_id = decoder;
    }
    // 8-bit pictures come as R, G, B (and alpha) planes: libheif converts YCbCr to planar RGB in any case,
    // and interleaving them would cost one more pass over a buffer of the picture's size. Deeper ones are
    // interleaved and reduced to 8 bits by libheif.
    int planar = api.handle_get_luma_bits != NULL && api.handle_get_luma_bits(image->handle) == 8
                 && api.handle_get_chroma_bits(image->handle) <= 8;
    struct heif_image *decoded = NULL;
    // Where each channel's samples are: a plane each (step 1), or interleaved (step 3 or 4).
    enum heif_channel channels[4] = {heif_channel_R, heif_channel_G, heif_channel_B, heif_channel_Alpha};
    const uint8_t *planes[4] = {NULL, NULL, NULL, NULL};
    int strides[4] = {0, 0, 0, 0};
    int count = image->has_alpha ? 4 : 3, step = 1, matches = 1;
    for (;;) {
        struct heif_error result = api.decode_image(image->handle, &decoded, heif_colorspace_RGB,
                                                    planar ? heif_chroma_444
                                                    : image->has_alpha ? heif_chroma_interleaved_RGBA
                                                                       : heif_chroma_interleaved_RGB,
                                                    options);
        if (result.code != heif_error_Ok) {
            if (options != NULL) api.decoding_options_free(options);
            copy_message(result, error, error_size);
            return status_for(result);
        }
        if (!planar) break;
        int deeper = 0;
        for (int c = 0; c < count; c++) {
            planes[c] = api.get_plane_readonly(decoded, channels[c], &strides[c]);
            matches = matches && planes[c] != NULL && api.image_get_width(decoded, channels[c]) == image->width
                      && api.image_get_height(decoded, channels[c]) == image->height;
            deeper = deeper || (planes[c] != NULL && api.image_get_bits_per_pixel_range(decoded, channels[c]) != 8);
        }
        if (!matches || !deeper) break;
        // An alpha plane deeper than the colour: libheif interleaves and reduces them instead.
        api.image_release(decoded);
        decoded = NULL;
        planar = 0;
    }
    if (!planar) {
        step = count;
        const uint8_t *pixels = api.get_plane_readonly(decoded, heif_channel_interleaved, &strides[0]);
        matches = pixels != NULL && api.image_get_width(decoded, heif_channel_interleaved) == image->width
                  && api.image_get_height(decoded, heif_channel_interleaved) == image->height;
        for (int c = 0; pixels != NULL && c < count; c++) {
            planes[c] = pixels + c;
            strides[c] = strides[0];
        }
    }
    if (options != NULL) api.decoding_options_free(options);
    if (!matches) {
        api.image_release(decoded);
        snprintf(error, error_size, "the decoded image does not match its header");
        return ATTACHE_HEIF_CORRUPT;
    }
    int width = image->width, height = image->height;
    size_t row_bytes = ((size_t)width * 3 + 3) & ~(size_t)3;
    memset(bmp, 0, 54);
    bmp[0] = 'B';
    bmp[1] = 'M';
    put32(bmp + 2, (uint32_t)needed);
    put32(bmp + 10, 54);
    put32(bmp + 14, 40);
    put32(bmp + 18, (uint32_t)width);
    put32(bmp + 22, (uint32_t)(-height));  // negative: top-down rows
    put16(bmp + 26, 1);
    put16(bmp + 28, 24);
    put32(bmp + 34, (uint32_t)(row_bytes * (size_t)height));
    for (int y = 0; y < height; y++) {
        const uint8_t *r_in = planes[0] + (size_t)y * (size_t)strides[0];
        const uint8_t *g_in = planes[1] + (size_t)y * (size_t)strides[1];
        const uint8_t *b_in = planes[2] + (size_t)y * (size_t)strides[2];
        uint8_t *row = bmp + 54 + (size_t)y * row_bytes;
        if (count == 4) {
            const uint8_t *a_in = planes[3] + (size_t)y * (size_t)strides[3];
            for (int x = 0; x < width; x++) {
                // Straight alpha over white: c·a + 255·(1 − a), rounded.
                unsigned a = a_in[x * step], inverse = 255 - a;
                row[x * 3] = (uint8_t)((b_in[x * step] * a + 255 * inverse + 127) / 255);
                row[x * 3 + 1] = (uint8_t)((g_in[x * step] * a + 255 * inverse + 127) / 255);
                row[x * 3 + 2] = (uint8_t)((r_in[x * step] * a + 255 * inverse + 127) / 255);
            }
        } else {
            for (int x = 0; x < width; x++) {
                row[x * 3] = b_in[x * step];
                row[x * 3 + 1] = g_in[x * step];
                row[x * 3 + 2] = r_in[x * step];
            }
        }
        for (size_t pad = (size_t)width * 3; pad < row_bytes; pad++) row[pad] = 0;
    }
    api.image_release(decoded);
    return ATTACHE_HEIF_OK;
}
