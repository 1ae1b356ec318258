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

static _Thread_local unsigned long tiled_grids = 0;

unsigned long attache_heif_tiled_grids(void) { return tiled_grids; }

// ---- Rows ----------------------------------------------------------------------------------------------

// What a row of output is made from: one channel's samples, in a plane of their own (`step` 1) or
// interleaved with others (`step` 3 or 4), 8-bit or 16-bit native-endian words (`wide`), subsampled by
// 2^shift_x across and 2^shift_y down (chroma).
struct channel {
    const uint8_t *data;
    int stride, step, wide, shift_x, shift_y;
};

// Copies row `y` of `channel` into `out` at full width (a subsampled sample repeated, nearest as libheif
// 1.15's own conversion does) as integers.
static void load_row(const struct channel *channel, int y, int width, int32_t *out) {
    const uint8_t *row = channel->data + (size_t)(y >> channel->shift_y) * (size_t)channel->stride;
    int step = channel->step, shift = channel->shift_x;
    if (!channel->wide) {
        if (step == 1 && shift == 0)
            for (int x = 0; x < width; x++) out[x] = row[x];
        else if (step == 1 && shift == 1)
            for (int x = 0; x < width; x++) out[x] = row[x >> 1];
        else
            for (int x = 0; x < width; x++) out[x] = row[(size_t)(x >> shift) * (size_t)step];
    } else {
        for (int x = 0; x < width; x++) {
            uint16_t value;
            memcpy(&value, row + (size_t)(x >> shift) * (size_t)step * 2, 2);
            out[x] = value;
        }
    }
}

// YCbCr → RGB with libheif 1.15's own arithmetic (its YCbCr-to-RGB step, in single precision, nearest
// chroma), so that a grid decoded here has the very pixels libheif would give: R = Y' + r_cr·Cr' and so
// on, where Y' = (Y − 16)·1.1689 and C' = (C − half)·1.1429 in limited range, and the factors come from
// H.273's Kr and Kb of the matrix (BT.601's rounded factors when it is unspecified).
struct matrix {
    float r_cr, g_cb, g_cr, b_cb;
    int full_range, half, top;
};

// The factors for `depth`-bit samples; 0 for the matrices libheif converts otherwise (identity, YCgCo,
// ICtCp, chromaticity-derived): such a grid is left to libheif.
static int make_matrix(int coefficients, int full_range, int depth, struct matrix *m) {
    float kr = 0, kb = 0;
    switch (coefficients) {
    case 1: kr = 0.2126f, kb = 0.0722f; break;
    case 4: kr = 0.30f, kb = 0.11f; break;
    case 5:
    case 6: kr = 0.299f, kb = 0.114f; break;
    case 7: kr = 0.212f, kb = 0.087f; break;
    case 9:
    case 10: kr = 0.2627f, kb = 0.0593f; break;
    case 0:
    case 8:
    case 11:
    case 12:
    case 13:
    case 14: return 0;
    default: break;  // unspecified or reserved
    }
    if (kr != 0 || kb != 0) {
        m->r_cr = 2 * (-kr + 1);
        m->g_cb = 2 * kb * (-kb + 1) / (kb + kr - 1);
        m->g_cr = 2 * kr * (-kr + 1) / (kb + kr - 1);
        m->b_cb = 2 * (-kb + 1);
    } else {
        m->r_cr = 1.402f, m->g_cb = -0.344136f, m->g_cr = -0.714136f, m->b_cb = 1.772f;
    }
    m->full_range = full_range;
    m->half = 1 << (depth - 1);
    m->top = (1 << depth) - 1;
    return 1;
}

// Rounds as libheif does (half up, then clamps) to 8 bits.
static inline uint8_t to_8_bits(float value) {
    int32_t x = (int32_t)(value + 0.5f);
    return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
}

// Straight alpha over white: c·a + 255·(1 − a), rounded.
static inline uint8_t over_white(unsigned c, unsigned a) { return (uint8_t)((c * a + 255 * (255 - a) + 127) / 255); }

// A few rows of integers and the output row.
struct rows {
    int32_t *y, *cb, *cr, *alpha;
    uint8_t *rgb;
};

static int rows_alloc(struct rows *rows, int width) {
    rows->y = malloc((size_t)width * 4 * sizeof(int32_t));
    rows->rgb = malloc((size_t)width * 3);
    if (rows->y == NULL || rows->rgb == NULL) {
        free(rows->y);
        free(rows->rgb);
        return 0;
    }
    rows->cb = rows->y + width;
    rows->cr = rows->cb + width;
    rows->alpha = rows->cr + width;
    return 1;
}

static void rows_free(struct rows *rows) {
    free(rows->y);
    free(rows->rgb);
}

// One row of 8-bit YCbCr, chroma subsampled across by 2^shift_x (0 or 1), to RGB: the common case, straight
// from the planes, each chroma sample's products computed once for the luma samples that share it.
static void convert_8bit(const uint8_t *luma, const uint8_t *u_row, const uint8_t *v_row, int width, int shift_x,
                         const struct matrix *m, uint8_t *out) {
    int step = 1 << shift_x;
    for (int x = 0; x < width; x += step) {
        float cb = (float)(u_row[x >> shift_x] - 128), cr = (float)(v_row[x >> shift_x] - 128);
        if (!m->full_range) {
            cb = cb * 1.1429f;
            cr = cr * 1.1429f;
        }
        float r = m->r_cr * cr, g_b = m->g_cb * cb, g_r = m->g_cr * cr, b = m->b_cb * cb;
        int last = x + step <= width ? step : width - x;
        for (int i = 0; i < last; i++) {
            float y = (float)luma[x + i];
            if (!m->full_range) y = (y - 16) * 1.1689f;
            uint8_t *pixel = out + (size_t)(x + i) * 3;
            pixel[0] = to_8_bits(y + r);
            pixel[1] = to_8_bits(y + g_b + g_r);
            pixel[2] = to_8_bits(y + b);
        }
    }
}

// Row `y` of any YCbCr (or monochrome, `cb` NULL) picture to RGB in `out`, through rows of integers: deeper
// samples are converted at their depth and scaled to 8 bits; grey is copied (as libheif does).
static void convert_any(const struct channel *y_channel, const struct channel *cb, const struct channel *cr, int y,
                        int width, const struct matrix *m, struct rows *rows, uint8_t *out) {
    load_row(y_channel, y, width, rows->y);
    if (cb != NULL) {
        load_row(cb, y, width, rows->cb);
        load_row(cr, y, width, rows->cr);
    }
    // 16 at 8 bits, 64 at 10: the black of limited range at this depth.
    float scale = 255.0f / (float)m->top, y_offset = (float)(m->half >> 3);
    for (int x = 0; x < width; x++) {
        float luma = (float)rows->y[x];
        if (cb == NULL) {
            out[x * 3] = out[x * 3 + 1] = out[x * 3 + 2] = to_8_bits(m->top == 255 ? luma : luma * scale);
            continue;
        }
        float u = (float)(rows->cb[x] - m->half), v = (float)(rows->cr[x] - m->half);
        if (!m->full_range) {
            luma = (luma - y_offset) * 1.1689f;
            u = u * 1.1429f;
            v = v * 1.1429f;
        }
        float r = luma + m->r_cr * v, g = luma + m->g_cb * u + m->g_cr * v, b = luma + m->b_cb * u;
        if (m->top != 255) r *= scale, g *= scale, b *= scale;
        out[x * 3] = to_8_bits(r);
        out[x * 3 + 1] = to_8_bits(g);
        out[x * 3 + 2] = to_8_bits(b);
    }
}

// Hands on each row of 8-bit R, G, B (and alpha) channels, alpha composited on white.
static void emit_rgb(int width, int height, const struct channel *channels, int has_alpha,
                     attache_heif_row_sink sink, void *context, struct rows *rows) {
    int32_t *in[4] = {rows->y, rows->cb, rows->cr, rows->alpha};
    for (int y = 0; y < height; y++) {
        for (int c = 0; c < 3 + has_alpha; c++) load_row(&channels[c], y, width, in[c]);
        uint8_t *out = rows->rgb;
        for (int x = 0; x < width; x++) {
            unsigned a = has_alpha ? (unsigned)in[3][x] : 255;
            for (int c = 0; c < 3; c++) out[x * 3 + c] = a == 255 ? (uint8_t)in[c][x] : over_white((unsigned)in[c][x], a);
        }
        sink(context, out);
    }
}

static int plane(const struct heif_image *decoded, enum heif_channel which, int width, int height, int shift_x,
                 int shift_y, struct channel *out, int *depth) {
    int stride = 0;
    const uint8_t *data = api.get_plane_readonly(decoded, which, &stride);
    if (data == NULL || stride <= 0) return 0;
    // The plane must hold every sample the rows read: its size is checked, never assumed.
    int needed_width = (width + (1 << shift_x) - 1) >> shift_x, needed_height = (height + (1 << shift_y) - 1) >> shift_y;
    int bits = api.image_get_bits_per_pixel_range(decoded, which);
    if (api.image_get_width(decoded, which) < needed_width || api.image_get_height(decoded, which) < needed_height
        || bits < 1 || bits > 16 || (size_t)stride < (size_t)needed_width * (bits > 8 ? 2 : 1))
        return 0;
    *out = (struct channel){data, stride, 1, bits > 8, shift_x, shift_y};
    *depth = bits;
    return 1;
}

// ---- The container -------------------------------------------------------------------------------------

// What this file reads of the HEIF container itself, for grids (ISO/IEC 23008-12): libheif 1.15 decodes a
// grid by pasting every tile, converted to RGB, into one picture of 3 bytes a pixel (36 MB at 12 MP) before
// handing it over, and has no call for one tile (heif_image_handle_decode_image_tile came with 1.19).
// Every read is bounds-checked; anything unexpected leaves the picture to libheif, which has already
// parsed and checked the file once (attache_heif_open).

struct box {
    const uint8_t *body;
    size_t size;
    uint32_t type;
};

static uint32_t be16(const uint8_t *at) { return (uint32_t)at[0] << 8 | at[1]; }
static uint32_t be32(const uint8_t *at) { return (uint32_t)at[0] << 24 | (uint32_t)at[1] << 16 | (uint32_t)at[2] << 8 | at[3]; }
#define FOURCC(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

// Reads a big-endian number of `size` bytes (0, 2, 4 or 8).
static uint64_t be_n(const uint8_t *at, size_t size) {
    uint64_t value = 0;
    for (size_t i = 0; i < size; i++) value = value << 8 | at[i];
    return value;
}

// The next box in [*at, end): 1 with `box` filled and *at moved past it, 0 at the end or on damage.
static int next_box(const uint8_t **at, const uint8_t *end, struct box *box) {
    if (end - *at < 8) return 0;
    uint64_t size = be32(*at), header = 8;
    if (size == 1) {
        if (end - *at < 16) return 0;
        size = be_n(*at + 8, 8);
        header = 16;
    } else if (size == 0) {
        size = (uint64_t)(end - *at);
    }
    if (size < header || size > (uint64_t)(end - *at)) return 0;
    box->type = be32(*at + 4);
    box->body = *at + header;
    box->size = (size_t)(size - header);
    *at += size;
    return 1;
}

static int find_box(const uint8_t *start, size_t size, uint32_t type, struct box *found) {
    const uint8_t *at = start;
    while (next_box(&at, start + size, found))
        if (found->type == type) return 1;
    return 0;
}

// The boxes of the meta box that the grid path reads.
struct meta {
    struct box iinf, iref, ipco, ipma, iloc, idat;
    int has_idat;
    uint32_t primary;
};

// The primary item, the item list and where the items' bytes are (pitm, iinf, iloc, idat): enough to
// read an item's type and data. `children`/`length` receive the meta box's children.
static int read_items(const uint8_t *data, size_t size, struct meta *meta, const uint8_t **children,
                      size_t *length) {
    struct box box, pitm;
    memset(meta, 0, sizeof *meta);
    if (!find_box(data, size, FOURCC('m', 'e', 't', 'a'), &box) || box.size < 4) return 0;
    *children = box.body + 4;
    *length = box.size - 4;
    if (!find_box(*children, *length, FOURCC('p', 'i', 't', 'm'), &pitm) || pitm.size < 6
        || !find_box(*children, *length, FOURCC('i', 'i', 'n', 'f'), &meta->iinf) || meta->iinf.size < 6
        || !find_box(*children, *length, FOURCC('i', 'l', 'o', 'c'), &meta->iloc) || meta->iloc.size < 8)
        return 0;
    meta->has_idat = find_box(*children, *length, FOURCC('i', 'd', 'a', 't'), &meta->idat);
    // Optional here (a single picture has none); derived_from reads it only when present.
    if (!find_box(*children, *length, FOURCC('i', 'r', 'e', 'f'), &meta->iref) || meta->iref.size < 4)
        memset(&meta->iref, 0, sizeof meta->iref);
    meta->primary = pitm.body[0] == 0 ? be16(pitm.body + 4) : pitm.size >= 8 ? be32(pitm.body + 4) : 0;
    return meta->primary != 0;
}

static int read_meta(const uint8_t *data, size_t size, struct meta *meta) {
    struct box iprp;
    const uint8_t *children;
    size_t length;
    return read_items(data, size, meta, &children, &length) && meta->iref.body != NULL
        && find_box(children, length, FOURCC('i', 'p', 'r', 'p'), &iprp)
        && find_box(iprp.body, iprp.size, FOURCC('i', 'p', 'c', 'o'), &meta->ipco)
        && find_box(iprp.body, iprp.size, FOURCC('i', 'p', 'm', 'a'), &meta->ipma) && meta->ipma.size >= 8;
}

// The item type of `item` in iinf (0 when not found).
static uint32_t item_type(const struct meta *meta, uint32_t item) {
    const struct box *iinf = &meta->iinf;
    const uint8_t *at = iinf->body + (iinf->body[0] == 0 ? 6 : 8), *end = iinf->body + iinf->size;
    if (at > end) return 0;
    struct box infe;
    while (next_box(&at, end, &infe)) {
        if (infe.type != FOURCC('i', 'n', 'f', 'e') || infe.size < 4 || infe.body[0] < 2) continue;
        int wide = infe.body[0] >= 3;
        if (infe.size < (size_t)(wide ? 14 : 12)) continue;
        uint32_t id = wide ? be32(infe.body + 4) : be16(infe.body + 4);
        if (id == item) return be32(infe.body + (wide ? 10 : 8));
    }
    return 0;
}

// The items that `item` refers to by a `dimg` reference (a grid's tiles, in raster order): their count,
// the first `capacity` of them in `to`.
static uint32_t derived_from(const struct meta *meta, uint32_t item, uint32_t *to, uint32_t capacity) {
    const struct box *iref = &meta->iref;
    int wide = iref->body[0] != 0;
    size_t id_size = wide ? 4 : 2;
    const uint8_t *at = iref->body + 4, *end = iref->body + iref->size;
    struct box reference;
    while (next_box(&at, end, &reference)) {
        if (reference.type != FOURCC('d', 'i', 'm', 'g') || reference.size < id_size + 2) continue;
        if ((wide ? be32(reference.body) : be16(reference.body)) != item) continue;
        uint32_t count = be16(reference.body + id_size);
        if (reference.size < id_size + 2 + (size_t)count * id_size) return 0;
        for (uint32_t i = 0; i < count && i < capacity; i++) {
            const uint8_t *id = reference.body + id_size + 2 + (size_t)i * id_size;
            to[i] = wide ? be32(id) : be16(id);
        }
        return count;
    }
    return 0;
}

// Calls `visit` with each property associated with `item`, in the order of its ipma entry (the order in
// which transformations apply), and whether it is essential; stops when `visit` returns 0.
static void item_properties(const struct meta *meta, uint32_t item,
                            int (*visit)(void *context, const struct box *property, int essential), void *context) {
    const struct box *ipma = &meta->ipma;
    int version = ipma->body[0], wide_index = ipma->body[3] & 1;
    size_t id_size = version < 1 ? 2 : 4, association_size = wide_index ? 2 : 1;
    const uint8_t *at = ipma->body + 8, *end = ipma->body + ipma->size;
    for (uint32_t entries = be32(ipma->body + 4); entries > 0; entries--) {
        if ((size_t)(end - at) < id_size + 1) return;
        uint32_t id = (uint32_t)be_n(at, id_size);
        unsigned count = at[id_size];
        at += id_size + 1;
        if ((size_t)(end - at) < count * association_size) return;
        if (id != item) {
            at += count * association_size;
            continue;
        }
        for (unsigned a = 0; a < count; a++, at += association_size) {
            unsigned value = wide_index ? be16(at) : at[0];
            unsigned index = value & (wide_index ? 0x7FFF : 0x7F);
            int essential = (value & (wide_index ? 0x8000 : 0x80)) != 0;
            // Property `index` (from 1) of ipco.
            const uint8_t *p = meta->ipco.body, *p_end = meta->ipco.body + meta->ipco.size;
            struct box property;
            unsigned n = 0;
            while (n < index && next_box(&p, p_end, &property)) n++;
            if (index == 0 || n != index) continue;
            if (!visit(context, &property, essential)) return;
        }
        return;
    }
}

struct grid {
    int rows, columns, tile_width, tile_height;
    // The picture as stored (before orientation), and the EXIF orientation that turns it upright.
    int width, height, orientation;
    // Orientation as a 2 × 2 matrix on (x, y), y down: each irot/imir multiplies it from the left.
    int m[4];
    int refused;
    uint32_t *tiles;
    // How every tile is coded (the first tile's picture, for its format) and converted.
    struct attache_avcodec_picture first;
    struct matrix matrix;
};

struct attache_heif_image {
    struct heif_context *context;
    struct heif_image_handle *handle;
    int width, height, has_alpha;
    // The file (libheif reads it without a copy, so it outlives the handle).
    const uint8_t *data;
    size_t size;
    // The plan (attache_heif_plan): libheif's decoder by name, or the grid decoded here tile by tile.
    char *decoder;
    int tiled;
    struct grid grid;
    struct attache_avcodec_picture first_tile;
};

static void release_plan(struct attache_heif_image *image) {
    free(image->decoder);
    image->decoder = NULL;
    free(image->grid.tiles);
    image->grid.tiles = NULL;
    attache_avcodec_picture_free(&image->first_tile);
    image->tiled = 0;
}



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
    release_plan(image);
    if (image->handle != NULL) api.handle_release(image->handle);
    if (image->context != NULL) api.context_free(image->context);
    free(image);
}

static int item_data(const struct attache_heif_image *image, const struct meta *meta, uint32_t item,
                     const uint8_t **out, size_t *out_size, uint8_t **owned);

enum { DERIVED_UNREADABLE = -1, MAX_DERIVED = 64 };

// The largest canvas of the file's derived images, grids and overlays (iovl), in pixels; 0 when there is
// none, or when the item boxes cannot be walked (libheif then reads the file alone). Two things libheif
// 1.15 does not check, found by the heif fuzz target:
// - It allocates each canvas whole from the item's own description, whatever the ispe of the image it
//   decodes says, and a derived image can be an input of another: a grid of 24 × 8 pixels whose one tile
//   was an overlay asked for 2.5 GB. So every derived item is measured, not only the primary image.
// - It follows a derived image's inputs without looking for a loop: a grid that named itself as its tile
//   recursed until memory ran out. So no input of a derived image may be derived itself (`*nested`
//   is set); phones write grids of coded pictures.
// DERIVED_UNREADABLE when a description cannot be read, or there are more than MAX_DERIVED of them.
static long long largest_derived_canvas(const struct attache_heif_image *image, int *nested) {
    struct meta meta;
    *nested = 0;
    const uint8_t *children;
    size_t length;
    if (!read_items(image->data, image->size, &meta, &children, &length)) return 0;
    const struct box *iinf = &meta.iinf;
    const uint8_t *at = iinf->body + (iinf->body[0] == 0 ? 6 : 8), *end = iinf->body + iinf->size;
    if (at > end) return 0;
    uint32_t derived[MAX_DERIVED];
    size_t derived_count = 0;
    long long largest = 0;
    struct box infe;
    while (next_box(&at, end, &infe)) {
        if (infe.type != FOURCC('i', 'n', 'f', 'e') || infe.size < 4 || infe.body[0] < 2) continue;
        int wide = infe.body[0] >= 3;
        if (infe.size < (size_t)(wide ? 14 : 12)) continue;
        uint32_t item = wide ? be32(infe.body + 4) : be16(infe.body + 4);
        uint32_t type = be32(infe.body + (wide ? 10 : 8));
        // ImageGrid: version, flags, rows - 1, columns - 1, then the size. ImageOverlay: version, flags,
        // four 16-bit fill values, then the size. Bit 0 of the flags: 32-bit sizes, else 16-bit.
        size_t offset;
        if (type == FOURCC('g', 'r', 'i', 'd')) {
            offset = 4;
        } else if (type == FOURCC('i', 'o', 'v', 'l')) {
            offset = 10;
        } else {
            continue;
        }
        if (derived_count == MAX_DERIVED) return DERIVED_UNREADABLE;
        derived[derived_count++] = item;
        const uint8_t *descriptor;
        size_t descriptor_size;
        uint8_t *owned = NULL;
        if (!item_data(image, &meta, item, &descriptor, &descriptor_size, &owned)) return DERIVED_UNREADABLE;
        size_t field = descriptor_size >= 2 && (descriptor[1] & 1) ? 4 : 2;
        long long pixels = -1;
        if (descriptor_size >= offset + 2 * field) {
            pixels = (long long)be_n(descriptor + offset, field) * (long long)be_n(descriptor + offset + field, field);
        }
        free(owned);
        if (pixels < 0) return DERIVED_UNREADABLE;
        if (pixels > largest) largest = pixels;
    }
    // libheif reads boxes this walk stops at (a child longer than its parent), so a list it cannot walk to
    // its end could hide a derived item, or a reference, from the checks here.
    if (at != end) return DERIVED_UNREADABLE;
    if (derived_count == 0) return largest;
    if (meta.iref.body == NULL) return DERIVED_UNREADABLE;
    // Every reference box must hold exactly the ids it declares: libheif reads a declared count past a
    // box's end. Then no derived image may refer to a derived image by `dimg`, in any of its boxes.
    size_t id_size = meta.iref.body[0] != 0 ? 4 : 2;
    const uint8_t *reference_at = meta.iref.body + 4, *references_end = meta.iref.body + meta.iref.size;
    struct box reference;
    while (next_box(&reference_at, references_end, &reference)) {
        if (reference.size < id_size + 2) return DERIVED_UNREADABLE;
        uint32_t count = be16(reference.body + id_size);
        if (reference.size != id_size + 2 + (size_t)count * id_size) return DERIVED_UNREADABLE;
        if (reference.type != FOURCC('d', 'i', 'm', 'g')) continue;
        for (uint32_t i = 0; i < count && !*nested; i++) {
            uint32_t input = (uint32_t)be_n(reference.body + id_size + 2 + (size_t)i * id_size, id_size);
            for (size_t d = 0; d < derived_count && !*nested; d++) *nested = input == derived[d];
        }
    }
    if (reference_at != references_end) return DERIVED_UNREADABLE;
    return largest;
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
    image->data = data;
    image->size = size;
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
    int nested;
    long long canvas = largest_derived_canvas(image, &nested);
    if (canvas < 0) {
        snprintf(error, error_size, "a grid or overlay of the file cannot be read");
        attache_heif_close(image);
        return ATTACHE_HEIF_CORRUPT;
    }
    if (canvas > pixel_limit) {
        snprintf(error, error_size, "the file holds a grid or overlay of %lld pixels, over the limit of %lld pixels",
                 canvas, pixel_limit);
        attache_heif_close(image);
        return ATTACHE_HEIF_LIMIT;
    }
    if (nested) {
        snprintf(error, error_size, "a grid or overlay of the file is made of another grid or overlay");
        attache_heif_close(image);
        return ATTACHE_HEIF_UNSUPPORTED;
    }
    *width = image->width;
    *height = image->height;
    *out = image;
    return ATTACHE_HEIF_OK;
}

// The bytes of `item`: a pointer into the file or idat when the item is one extent, else a copy in
// `*owned` (freed by the caller). 0 when the item cannot be located.
static int item_data(const struct attache_heif_image *image, const struct meta *meta, uint32_t item,
                     const uint8_t **out, size_t *out_size, uint8_t **owned) {
    const struct box *iloc = &meta->iloc;
    const uint8_t *at = iloc->body, *end = iloc->body + iloc->size;
    int version = at[0];
    size_t offset_size = at[4] >> 4, length_size = at[4] & 15, base_size = at[5] >> 4;
    size_t index_size = version == 1 || version == 2 ? at[5] & 15 : 0;
    at += 6;
    uint32_t count;
    if (version < 2) {
        count = be16(at);
        at += 2;
    } else {
        if (end - at < 4) return 0;
        count = be32(at);
        at += 4;
    }
    *owned = NULL;
    for (; count > 0; count--) {
        size_t id_size = version < 2 ? 2 : 4, method_size = version == 1 || version == 2 ? 2 : 0;
        if ((size_t)(end - at) < id_size + method_size + 2 + base_size + 2) return 0;
        uint32_t id = (uint32_t)be_n(at, id_size);
        at += id_size;
        int method = method_size ? (int)(be16(at) & 15) : 0;
        at += method_size + 2;  // data_reference_index
        uint64_t base = be_n(at, base_size);
        at += base_size;
        unsigned extents = be16(at);
        at += 2;
        size_t extent_size = index_size + offset_size + length_size;
        if ((size_t)(end - at) < extents * extent_size) return 0;
        if (id != item) {
            at += extents * extent_size;
            continue;
        }
        const uint8_t *source = image->data;
        size_t source_size = image->size;
        if (method == 1) {
            if (!meta->has_idat) return 0;
            source = meta->idat.body;
            source_size = meta->idat.size;
        } else if (method != 0) {
            return 0;
        }
        size_t total = 0;
        for (unsigned e = 0; e < extents; e++) {
            const uint8_t *extent = at + e * extent_size + index_size;
            uint64_t offset = base + be_n(extent, offset_size), length = be_n(extent + offset_size, length_size);
            // A length of 0 means "to the end of the source" only for a lone extent.
            if (length == 0 && extents == 1 && offset <= source_size) length = source_size - offset;
            if (offset > source_size || length > source_size - offset || length > SIZE_MAX - total) return 0;
            total += (size_t)length;
            if (extents == 1) {
                *out = source + offset;
                *out_size = (size_t)length;
                return 1;
            }
        }
        uint8_t *copy = malloc(total > 0 ? total : 1);
        if (copy == NULL) return 0;
        size_t filled = 0;
        for (unsigned e = 0; e < extents; e++) {
            const uint8_t *extent = at + e * extent_size + index_size;
            uint64_t offset = base + be_n(extent, offset_size), length = be_n(extent + offset_size, length_size);
            memcpy(copy + filled, source + offset, (size_t)length);
            filled += (size_t)length;
        }
        *owned = copy;
        *out = copy;
        *out_size = total;
        return 1;
    }
    return 0;
}

// ---- Grids, tile by tile -------------------------------------------------------------------------------


// The properties of the grid item: irot and imir compose the orientation (as libheif 1.15 reads them:
// irot turns counter-clockwise, imir axis 1 swaps left and right, axis 0 top and bottom); anything else
// that changes the picture (clap, or an essential property this file does not know) leaves it to libheif.
static int visit_grid_property(void *context, const struct box *property, int essential) {
    struct grid *grid = context;
    int step[4] = {1, 0, 0, 1};
    switch (property->type) {
    case FOURCC('i', 'r', 'o', 't'):
        if (property->size < 1) return grid->refused = 1, 0;
        switch (property->body[0] & 3) {
        case 1: step[0] = 0, step[1] = 1, step[2] = -1, step[3] = 0; break;  // 90° counter-clockwise
        case 2: step[0] = -1, step[3] = -1; break;
        case 3: step[0] = 0, step[1] = -1, step[2] = 1, step[3] = 0; break;
        }
        break;
    case FOURCC('i', 'm', 'i', 'r'):
        if (property->size < 1) return grid->refused = 1, 0;
        if (property->body[0] & 1) step[0] = -1;
        else step[3] = -1;
        break;
    case FOURCC('i', 's', 'p', 'e'):
    case FOURCC('c', 'o', 'l', 'r'):
    case FOURCC('p', 'i', 'x', 'i'):
        return 1;
    default:
        if (essential || property->type == FOURCC('c', 'l', 'a', 'p')) return grid->refused = 1, 0;
        return 1;
    }
    int *m = grid->m, product[4] = {step[0] * m[0] + step[1] * m[2], step[0] * m[1] + step[1] * m[3],
                                    step[2] * m[0] + step[3] * m[2], step[2] * m[1] + step[3] * m[3]};
    memcpy(m, product, sizeof product);
    return 1;
}

// The EXIF orientation of a transformation matrix (EXIF 2.3: 6 turns the stored picture 90° clockwise).
static int orientation_of(const int m[4]) {
    static const int matrices[8][4] = {{1, 0, 0, 1},  {-1, 0, 0, 1}, {-1, 0, 0, -1}, {1, 0, 0, -1},
                                       {0, 1, 1, 0},  {0, -1, 1, 0}, {0, -1, -1, 0}, {0, 1, -1, 0}};
    for (int i = 0; i < 8; i++)
        if (memcmp(matrices[i], m, sizeof matrices[i]) == 0) return i + 1;
    return 1;
}

struct tile_properties {
    struct box hvcc, colr;
    int has_hvcc, has_colr, width, height, refused;
};

static int visit_tile_property(void *context, const struct box *property, int essential) {
    struct tile_properties *tile = context;
    switch (property->type) {
    case FOURCC('h', 'v', 'c', 'C'): tile->hvcc = *property, tile->has_hvcc = 1; break;
    case FOURCC('c', 'o', 'l', 'r'): tile->colr = *property, tile->has_colr = 1; break;
    case FOURCC('i', 's', 'p', 'e'):
        if (property->size >= 12) tile->width = (int)be32(property->body + 4), tile->height = (int)be32(property->body + 8);
        break;
    case FOURCC('p', 'i', 'x', 'i'): break;
    default:
        if (essential) tile->refused = 1;
    }
    return !tile->refused;
}

// Whether the primary image is a grid of HEVC tiles that this file decodes (no alpha, libavcodec loaded,
// orientation by irot/imir alone); then `grid` describes it.
static int plan_grid(const struct attache_heif_image *image, struct grid *grid) {
    struct meta meta;
    memset(grid, 0, sizeof *grid);
    grid->m[0] = grid->m[3] = 1;
    if (image->has_alpha || !attache_avcodec_available() || !read_meta(image->data, image->size, &meta)
        || item_type(&meta, meta.primary) != FOURCC('g', 'r', 'i', 'd'))
        return 0;
    const uint8_t *descriptor;
    size_t descriptor_size;
    uint8_t *owned = NULL;
    if (!item_data(image, &meta, meta.primary, &descriptor, &descriptor_size, &owned)) return 0;
    int fields = descriptor_size >= 4 && (descriptor[1] & 1) ? 4 : 2;
    int ok = descriptor_size >= (size_t)(4 + 2 * fields) && descriptor[0] == 0;
    if (ok) {
        grid->rows = descriptor[2] + 1;
        grid->columns = descriptor[3] + 1;
        grid->width = (int)be_n(descriptor + 4, (size_t)fields);
        grid->height = (int)be_n(descriptor + 4 + fields, (size_t)fields);
    }
    free(owned);
    if (!ok || grid->width <= 0 || grid->height <= 0) return 0;
    item_properties(&meta, meta.primary, visit_grid_property, grid);
    if (grid->refused) return 0;
    grid->orientation = orientation_of(grid->m);
    // libheif's header (checked against the pixel limit) must describe the same picture.
    int swaps = grid->orientation >= 5;
    if ((swaps ? grid->height : grid->width) != image->width || (swaps ? grid->width : grid->height) != image->height)
        return 0;
    // Up to 1,024 tiles (a 48 MP photo has 192): every tile's boxes are looked up by a walk of the meta
    // box, fine for hundreds, not for the 65,536 a hostile grid can declare. Larger grids go to libheif.
    uint32_t count = (uint32_t)(grid->rows * grid->columns);
    if (count > 1024) return 0;
    grid->tiles = calloc(count, sizeof *grid->tiles);
    if (grid->tiles == NULL || derived_from(&meta, meta.primary, grid->tiles, count) != count) goto refuse;
    struct tile_properties first = {0};
    item_properties(&meta, grid->tiles[0], visit_tile_property, &first);
    grid->tile_width = first.width;
    grid->tile_height = first.height;
    // Tiles that cover the picture and no more than one tile beyond it, each an HEVC picture.
    if (first.refused || grid->tile_width <= 0 || grid->tile_height <= 0
        || (long long)grid->columns * grid->tile_width < grid->width
        || (long long)(grid->columns - 1) * grid->tile_width >= grid->width
        || (long long)grid->rows * grid->tile_height < grid->height
        || (long long)(grid->rows - 1) * grid->tile_height >= grid->height)
        goto refuse;
    for (uint32_t i = 0; i < count; i++)
        if (item_type(&meta, grid->tiles[i]) != FOURCC('h', 'v', 'c', '1')) goto refuse;
    return 1;
refuse:
    free(grid->tiles);
    grid->tiles = NULL;
    return 0;
}
// libheif's own conversion to 8-bit RGB (the reference, and what any other picture takes): planar R, G,
// B (and alpha) when the picture is 8-bit, interleaved and reduced to 8 bits by libheif otherwise.
static struct heif_error decode_rgb(struct attache_heif_image *image, const struct heif_decoding_options *options,
                                    struct heif_image **decoded, struct channel channels[4]) {
    int planar = api.handle_get_luma_bits != NULL && api.handle_get_luma_bits(image->handle) == 8
                 && api.handle_get_chroma_bits(image->handle) <= 8;
    enum heif_channel names[4] = {heif_channel_R, heif_channel_G, heif_channel_B, heif_channel_Alpha};
    int count = image->has_alpha ? 4 : 3;
    for (;;) {
        struct heif_error result = api.decode_image(image->handle, decoded, heif_colorspace_RGB,
                                                    planar ? heif_chroma_444
                                                    : image->has_alpha ? heif_chroma_interleaved_RGBA
                                                                       : heif_chroma_interleaved_RGB,
                                                    options);
        if (result.code != heif_error_Ok) return result;
        int matches = 1, deeper = 0, depth = 8;
        if (planar) {
            for (int c = 0; c < count; c++) {
                matches = matches && plane(*decoded, names[c], image->width, image->height, 0, 0, &channels[c], &depth);
                deeper = deeper || depth != 8;
            }
            if (matches && !deeper) return result;
            // An alpha plane deeper than the colour: libheif interleaves and reduces them instead.
            api.image_release(*decoded);
            *decoded = NULL;
            planar = 0;
            continue;
        }
        int stride = 0;
        const uint8_t *pixels = api.get_plane_readonly(*decoded, heif_channel_interleaved, &stride);
        if (pixels == NULL || api.image_get_width(*decoded, heif_channel_interleaved) != image->width
            || api.image_get_height(*decoded, heif_channel_interleaved) != image->height
            || stride < image->width * count) {
            api.image_release(*decoded);
            *decoded = NULL;
            struct heif_error mismatch = {heif_error_Invalid_input, heif_suberror_Unspecified,
                                          "the decoded image does not match its header"};
            return mismatch;
        }
        for (int c = 0; c < count; c++) channels[c] = (struct channel){pixels + c, stride, count, 0, 0, 0};
        return result;
    }
}

// The colour description of a tile as libheif 1.15 converts it: the tile's own nclx colr box, else the
// one in its coded stream (VUI); BT.601 where the matrix is unspecified.
static void tile_colour(const struct tile_properties *tile, const struct attache_avcodec_picture *picture,
                        int *matrix, int *full_range) {
    *matrix = picture->matrix;
    *full_range = picture->full_range;
    if (tile->has_colr && tile->colr.size >= 11 && be32(tile->colr.body) == FOURCC('n', 'c', 'l', 'x')) {
        *matrix = (int)be16(tile->colr.body + 8);
        *full_range = (tile->colr.body[10] & 0x80) != 0;
    }
}

// Decodes tile `item` of the grid into `picture`: ATTACHE_HEIF_OK, or a status with `error` filled.
static int decode_tile(const struct attache_heif_image *image, const struct meta *meta, uint32_t item,
                       struct tile_properties *tile, struct attache_avcodec_picture *picture, char *error,
                       size_t error_size) {
    memset(tile, 0, sizeof *tile);
    item_properties(meta, item, visit_tile_property, tile);
    const uint8_t *data;
    size_t size;
    uint8_t *owned = NULL;
    if (!tile->has_hvcc || !item_data(image, meta, item, &data, &size, &owned)) {
        snprintf(error, error_size, "grid tile %u has no HEVC data or configuration", item);
        return ATTACHE_HEIF_CORRUPT;
    }
    struct heif_error result = attache_avcodec_decode_item(tile->hvcc.body, tile->hvcc.size, data, size, picture);
    free(owned);
    if (result.code != heif_error_Ok) {
        copy_message(result, error, error_size);
        return status_for(result);
    }
    return ATTACHE_HEIF_OK;
}

// Decodes the grid a row of tiles at a time with libavcodec and hands each picture row to `sink`: at
// most one row of tiles (3 MB for 512-pixel tiles across 4000 pixels, 8-bit 4:2:0) is held, plus one
// RGB row. The first tile was decoded by the plan.
static int decode_tiles(struct attache_heif_image *image, attache_heif_row_sink sink, void *context,
                        struct rows *rows, char *error, size_t error_size) {
    const struct grid *grid = &image->grid;
    struct meta meta;
    struct attache_avcodec_picture *pictures = calloc((size_t)grid->columns, sizeof *pictures);
    if (pictures == NULL || !read_meta(image->data, image->size, &meta)) {
        free(pictures);
        snprintf(error, error_size, "out of memory");
        return ATTACHE_HEIF_NO_MEMORY;
    }
    pictures[0] = image->first_tile;
    memset(&image->first_tile, 0, sizeof image->first_tile);
    const struct matrix m = grid->matrix;
    int status = ATTACHE_HEIF_OK;
    for (int r = 0; r < grid->rows && status == ATTACHE_HEIF_OK; r++) {
        for (int c = r == 0 ? 1 : 0; c < grid->columns && status == ATTACHE_HEIF_OK; c++) {
            uint32_t item = grid->tiles[r * grid->columns + c];
            struct tile_properties tile;
            status = decode_tile(image, &meta, item, &tile, &pictures[c], error, error_size);
            const struct attache_avcodec_picture *p = &pictures[c], *first = &grid->first;
            if (status == ATTACHE_HEIF_OK
                && (p->width != first->width || p->height != first->height || p->components != first->components
                    || p->depth != first->depth || p->shift_x != first->shift_x || p->shift_y != first->shift_y)) {
                snprintf(error, error_size, "grid tile %u is not coded as the grid's first tile", item);
                status = ATTACHE_HEIF_CORRUPT;
            }
        }
        if (status != ATTACHE_HEIF_OK) break;
        const struct attache_avcodec_picture *first = &grid->first;
        int fast = first->components == 3 && first->depth == 8;
        int band = grid->height - r * grid->tile_height < grid->tile_height ? grid->height - r * grid->tile_height
                                                                             : grid->tile_height;
        for (int y = 0; y < band; y++) {
            for (int c = 0; c < grid->columns; c++) {
                const struct attache_avcodec_picture *p = &pictures[c];
                int x0 = c * grid->tile_width;
                int span = grid->width - x0 < grid->tile_width ? grid->width - x0 : grid->tile_width;
                uint8_t *out = rows->rgb + (size_t)x0 * 3;
                if (fast) {
                    convert_8bit(p->planes[0] + (size_t)y * (size_t)p->strides[0],
                                 p->planes[1] + (size_t)(y >> p->shift_y) * (size_t)p->strides[1],
                                 p->planes[2] + (size_t)(y >> p->shift_y) * (size_t)p->strides[2], span, p->shift_x,
                                 &m, out);
                } else {
                    int wide = p->depth > 8;
                    struct channel luma = {p->planes[0], p->strides[0], 1, wide, 0, 0};
                    struct channel cb = {p->planes[1], p->strides[1], 1, wide, p->shift_x, p->shift_y};
                    struct channel cr = {p->planes[2], p->strides[2], 1, wide, p->shift_x, p->shift_y};
                    int colour = p->components == 3;
                    convert_any(&luma, colour ? &cb : NULL, colour ? &cr : NULL, y, span, &m, rows, out);
                }
            }
            sink(context, rows->rgb);
        }
        for (int c = 0; c < grid->columns; c++) attache_avcodec_picture_free(&pictures[c]);
    }
    for (int c = 0; c < grid->columns; c++) attache_avcodec_picture_free(&pictures[c]);
    free(pictures);
    if (status == ATTACHE_HEIF_OK) tiled_grids += 1;
    return status;
}

// Decodes the grid's first tile, which says how all are coded (every tile must be alike): 0 when that is
// a pixel format or colour matrix this file does not convert, and libheif takes the grid.
static int plan_first_tile(struct attache_heif_image *image, char *error, size_t error_size) {
    struct meta meta;
    struct tile_properties tile;
    struct grid *grid = &image->grid;
    if (!read_meta(image->data, image->size, &meta)
        || decode_tile(image, &meta, grid->tiles[0], &tile, &image->first_tile, error, error_size) != ATTACHE_HEIF_OK)
        return release_plan(image), 0;
    const struct attache_avcodec_picture *p = &image->first_tile;
    int matrix, full_range;
    tile_colour(&tile, p, &matrix, &full_range);
    if (p->width != grid->tile_width || p->height != grid->tile_height
        || !make_matrix(matrix, full_range, p->depth, &grid->matrix))
        return release_plan(image), 0;
    grid->first = *p;
    return 1;
}

int attache_heif_plan(struct attache_heif_image *image, const char *decoder, int libheif_decodes, int *width,
                      int *height, int *orientation, char *error, size_t error_size) {
    release_plan(image);
    if (decoder != NULL) {
        if (api.decoding_options_alloc == NULL) {
            snprintf(error, error_size, "this libheif cannot choose its decoder");
            return ATTACHE_HEIF_UNSUPPORTED;
        }
        if ((image->decoder = strdup(decoder)) == NULL) return ATTACHE_HEIF_NO_MEMORY;
    }
    image->tiled = !libheif_decodes && decoder == NULL && plan_grid(image, &image->grid)
                   && plan_first_tile(image, error, error_size);
    *width = image->tiled ? image->grid.width : image->width;
    *height = image->tiled ? image->grid.height : image->height;
    *orientation = image->tiled ? image->grid.orientation : 1;
    return ATTACHE_HEIF_OK;
}

// libheif decodes and converts the whole picture (orientation applied): what every picture but a grid
// of HEVC tiles takes.
static int decode_by_libheif(struct attache_heif_image *image, attache_heif_row_sink sink, void *context,
                             struct rows *rows, char *error, size_t error_size) {
    // Default decoding options: the `irot`, `imir` and `clap` transformations are applied.
    struct heif_decoding_options *options = NULL;
    if (image->decoder != NULL) {
        if ((options = api.decoding_options_alloc()) == NULL || options->version < 4) {
            if (options != NULL) api.decoding_options_free(options);
            snprintf(error, error_size, "this libheif cannot choose its decoder");
            return ATTACHE_HEIF_UNSUPPORTED;
        }
        options->decoder_id = image->decoder;
    }
    struct heif_image *decoded = NULL;
    struct channel channels[4];
    struct heif_error result = decode_rgb(image, options, &decoded, channels);
    if (options != NULL) api.decoding_options_free(options);
    if (result.code != heif_error_Ok) {
        copy_message(result, error, error_size);
        return status_for(result);
    }
    emit_rgb(image->width, image->height, channels, image->has_alpha, sink, context, rows);
    api.image_release(decoded);
    return ATTACHE_HEIF_OK;
}

int attache_heif_decode_rows(struct attache_heif_image *image, attache_heif_row_sink sink, void *context,
                             char *error, size_t error_size) {
    struct rows rows;
    int width = image->tiled ? image->grid.width : image->width;
    if (!rows_alloc(&rows, width)) {
        snprintf(error, error_size, "out of memory");
        return ATTACHE_HEIF_NO_MEMORY;
    }
    int status = image->tiled ? decode_tiles(image, sink, context, &rows, error, error_size)
                              : decode_by_libheif(image, sink, context, &rows, error, error_size);
    rows_free(&rows);
    return status;
}
