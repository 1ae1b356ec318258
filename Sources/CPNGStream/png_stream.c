// Row-by-row PNG decoding (see the header). The Swift side feeds each row straight into the resampler,
// so the decoded picture (300 MB for a 100 MP RGB file) never exists.

#include "attache_png_stream.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <png.h>

struct attache_png_stream {
    png_structp png;
    png_infop info;
    jmp_buf jump;
    const unsigned char *data;
    size_t size;
    size_t offset;
    int started;
    int truncated;
    int interlaced;
    int passes;
    int height;
    int rows_read;
    /// Where the first IDAT chunk starts (its length field), the chunk count and payload total.
    size_t idat_start;
    size_t idat_chunks;
    size_t idat_bytes;
    size_t allocated;
    size_t peak_allocated;
    char message[256];
};

// libpng's memory goes through these, so that a test can see the most it ever held (a header in front
// of each block remembers its size).
typedef union { size_t size; max_align_t align; } block_header;

static png_voidp counted_malloc(png_structp png, png_alloc_size_t size) {
    struct attache_png_stream *stream = png_get_mem_ptr(png);
    block_header *block = malloc(sizeof(block_header) + size);
    if (!block) return NULL;
    block->size = size;
    stream->allocated += size;
    if (stream->allocated > stream->peak_allocated) stream->peak_allocated = stream->allocated;
    return block + 1;
}

static void counted_free(png_structp png, png_voidp pointer) {
    if (!pointer) return;
    struct attache_png_stream *stream = png_get_mem_ptr(png);
    block_header *block = (block_header *)pointer - 1;
    stream->allocated -= block->size;
    free(block);
}

static void on_error(png_structp png, png_const_charp text) {
    struct attache_png_stream *stream = png_get_error_ptr(png);
    if (!stream->message[0] || !stream->truncated) snprintf(stream->message, sizeof stream->message, "%s", text);
    longjmp(stream->jump, 1);
}

// Warnings (a bad CRC in an ancillary chunk, an unknown sRGB intent, ...) do not stop decoding, as in
// every viewer; the picture is still complete.
static void on_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

static void read_data(png_structp png, png_bytep out, size_t length) {
    struct attache_png_stream *stream = png_get_io_ptr(png);
    if (length > stream->size - stream->offset) {
        stream->truncated = 1;
        snprintf(stream->message, sizeof stream->message, "the data ends before the image does");
        png_error(png, "unexpected end of data");
    }
    memcpy(out, stream->data + stream->offset, length);
    stream->offset += length;
}

attache_png_stream *attache_png_stream_create(const unsigned char *data, size_t size) {
    struct attache_png_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NULL;
    stream->data = data;
    stream->size = size;
    stream->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, stream, on_error, on_warning, stream,
                                           counted_malloc, counted_free);
    if (!stream->png) {
        free(stream);
        return NULL;
    }
    // png_create_info_struct returns NULL rather than calling the error handler when memory is short.
    stream->info = png_create_info_struct(stream->png);
    if (!stream->info) {
        png_destroy_read_struct(&stream->png, NULL, NULL);
        free(stream);
        return NULL;
    }
    png_set_read_fn(stream->png, stream, read_data);
    return stream;
}

void attache_png_stream_destroy(attache_png_stream *stream) {
    if (!stream) return;
    png_destroy_read_struct(&stream->png, &stream->info, NULL);
    free(stream);
}

static void find_whole_inflate(struct attache_png_stream *stream, attache_png_stream_info *info, int bit_depth,
                               int color_type);

static int status_after_error(const struct attache_png_stream *stream) {
    return stream->truncated ? ATTACHE_PNG_TRUNCATED : ATTACHE_PNG_ERROR;
}

int attache_png_stream_start(attache_png_stream *stream, attache_png_stream_info *info) {
    png_structp png = stream->png;
    png_infop header = stream->info;
    memset(info, 0, sizeof *info);
    if (stream->started) {
        snprintf(stream->message, sizeof stream->message, "the decoder was already started");
        return ATTACHE_PNG_ERROR;
    }
    stream->started = 1;
    if (setjmp(stream->jump)) return status_after_error(stream);

    // The pixel limit is checked by the caller from these values before any row buffer exists; libpng's
    // own limit (1,000,000 per side) is lowered to what the rest of the stage accepts.
    png_set_user_limits(png, 65535, 65535);
    png_read_info(png, header);
    int color_type = png_get_color_type(png, header);
    int bit_depth = png_get_bit_depth(png, header);
    int has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, header, PNG_INFO_tRNS);
    int gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;

    // The simplified API's png_image_read_direct for 8-bit sRGB output, step by step: expand, grey with
    // alpha to RGBA, files without gamma information taken as sRGB (for 16-bit files too, as browsers do,
    // where the simplified API assumes linear light), 16-bit scaled (rounded), straight alpha.
    png_set_expand(png);
    if (gray && has_alpha) png_set_gray_to_rgb(png);
    png_set_alpha_mode_fixed(png, PNG_ALPHA_PNG, PNG_DEFAULT_sRGB);
    if (bit_depth == 16) png_set_scale_16(png);
    stream->interlaced = png_get_interlace_type(png, header) != PNG_INTERLACE_NONE;
    stream->passes = stream->interlaced ? png_set_interlace_handling(png) : 1;
    png_read_update_info(png, header);

    info->width = (int)png_get_image_width(png, header);
    info->height = (int)png_get_image_height(png, header);
    info->channels = png_get_channels(png, header);
    info->interlaced = stream->interlaced;
    info->bit_depth = bit_depth;
    info->color_type = color_type;
    stream->height = info->height;
    find_whole_inflate(stream, info, bit_depth, color_type);
    if (png_get_bit_depth(png, header) != 8 || (info->channels != 1 && info->channels != 3 && info->channels != 4)
        || png_get_rowbytes(png, header) != (size_t)info->width * (size_t)info->channels) {
        snprintf(stream->message, sizeof stream->message, "unexpected row format after conversion");
        return ATTACHE_PNG_ERROR;
    }
    return ATTACHE_PNG_OK;
}

static uint32_t big_endian32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// Whether the file's own samples are what libpng would deliver, and where its image data lies. libpng's
// png_read_info stops right after the first IDAT chunk's length and type, so the chunk starts 8 bytes
// before the read offset; the IDAT chunks that follow it are walked without reading their data.
static void find_whole_inflate(struct attache_png_stream *stream, attache_png_stream_info *info, int bit_depth,
                               int color_type) {
    png_structp png = stream->png;
    png_infop header = stream->info;
    if (bit_depth != 8 || stream->interlaced || png_get_valid(png, header, PNG_INFO_tRNS)) return;
    int channels;
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: channels = 1; break;
    case PNG_COLOR_TYPE_GRAY_ALPHA: channels = 2; break;
    case PNG_COLOR_TYPE_RGB: channels = 3; break;
    case PNG_COLOR_TYPE_RGB_ALPHA: channels = 4; break;
    default: return;
    }
    // libpng corrects gamma when the file's (from gAMA, or sRGB's 1/2.2) times the output's (sRGB, 2.2)
    // is 5 % or more away from 1; without either chunk it assumes the output's and corrects nothing.
    // Only a product well inside that band is taken here (2 %), so a rounding difference can never
    // decide: everything else goes through libpng's rows.
    png_fixed_point file_gamma = 0;
    if (png_get_gAMA_fixed(png, header, &file_gamma)) {
        double product = (double)file_gamma * 2.2;
        if (product < 98000.0 || product > 102000.0) return;
    }
    size_t offset = stream->offset;
    if (offset < 8 || memcmp(stream->data + offset - 4, "IDAT", 4) != 0) return;
    size_t at = offset - 8, chunks = 0, total = 0;
    while (at + 12 <= stream->size && memcmp(stream->data + at + 4, "IDAT", 4) == 0) {
        uint32_t length = big_endian32(stream->data + at);
        if (length > 0x7FFFFFFFu || length > stream->size - at - 12) return; // cut off: libpng says how
        total += length;
        chunks++;
        at += 12 + (size_t)length;
    }
    stream->idat_start = offset - 8;
    stream->idat_chunks = chunks;
    stream->idat_bytes = total;
    info->whole_inflate = 1;
    info->file_channels = channels;
    info->filtered_bytes = (size_t)info->height * (1 + (size_t)info->width * (size_t)channels);
    info->compressed_bytes = total;
    info->gathered_bytes = chunks > 1 ? total : 0;
}

int attache_png_stream_inflate(attache_png_stream *stream, unsigned char *filtered, size_t size) {
    if (!stream->started || stream->idat_chunks == 0 || stream->rows_read != 0) {
        snprintf(stream->message, sizeof stream->message, "no image data to inflate");
        return ATTACHE_PNG_ERROR;
    }
    const unsigned char *compressed = NULL;
    unsigned char *gathered = NULL;
    if (stream->idat_chunks > 1) {
        gathered = malloc(stream->idat_bytes ? stream->idat_bytes : 1);
        if (!gathered) {
            snprintf(stream->message, sizeof stream->message, "out of memory");
            return ATTACHE_PNG_ERROR;
        }
    }
    size_t at = stream->idat_start, copied = 0;
    for (size_t chunk = 0; chunk < stream->idat_chunks; chunk++) {
        const unsigned char *p = stream->data + at;
        uint32_t length = big_endian32(p);
        // The CRC covers the type and the data; libdeflate's CRC-32 uses the carry-less multiply.
        if ((uint32_t)libdeflate_crc32(0, p + 4, (size_t)length + 4) != big_endian32(p + 8 + length)) {
            free(gathered);
            snprintf(stream->message, sizeof stream->message, "IDAT: CRC error");
            return ATTACHE_PNG_ERROR;
        }
        if (gathered) {
            memcpy(gathered + copied, p + 8, length);
        } else {
            compressed = p + 8;
        }
        copied += length;
        at += 12 + (size_t)length;
    }
    if (gathered) compressed = gathered;
    struct libdeflate_decompressor *inflater = libdeflate_alloc_decompressor();
    if (!inflater) {
        free(gathered);
        snprintf(stream->message, sizeof stream->message, "out of memory");
        return ATTACHE_PNG_ERROR;
    }
    // No actual-size argument: anything but exactly `size` bytes is an error.
    enum libdeflate_result result = libdeflate_zlib_decompress(inflater, compressed, copied, filtered, size, NULL);
    libdeflate_free_decompressor(inflater);
    free(gathered);
    if (result != LIBDEFLATE_SUCCESS) {
        snprintf(stream->message, sizeof stream->message, "the image data does not inflate in one piece (%d)",
                 (int)result);
        return ATTACHE_PNG_ERROR;
    }
    return ATTACHE_PNG_OK;
}

int attache_png_stream_read_rows(attache_png_stream *stream, unsigned char *rows, int count, size_t stride) {
    if (!stream->started || stream->interlaced || count < 0 || count > stream->height - stream->rows_read) {
        snprintf(stream->message, sizeof stream->message, "no such rows");
        return ATTACHE_PNG_ERROR;
    }
    if (setjmp(stream->jump)) return status_after_error(stream);
    for (int i = 0; i < count; i++) {
        png_read_row(stream->png, rows + (size_t)i * stride, NULL);
        stream->rows_read++;
    }
    return ATTACHE_PNG_OK;
}

int attache_png_stream_read_image(attache_png_stream *stream, unsigned char *buffer, size_t stride) {
    if (!stream->started || !stream->interlaced || stream->rows_read != 0) {
        snprintf(stream->message, sizeof stream->message, "not an interlaced image at its start");
        return ATTACHE_PNG_ERROR;
    }
    if (setjmp(stream->jump)) return status_after_error(stream);
    for (int pass = 0; pass < stream->passes; pass++) {
        for (int y = 0; y < stream->height; y++) png_read_row(stream->png, buffer + (size_t)y * stride, NULL);
    }
    stream->rows_read = stream->height;
    return ATTACHE_PNG_OK;
}

const char *attache_png_stream_message(const attache_png_stream *stream) { return stream->message; }

size_t attache_png_stream_allocated(const attache_png_stream *stream) { return stream->allocated; }

size_t attache_png_stream_peak_allocated(const attache_png_stream *stream) { return stream->peak_allocated; }
