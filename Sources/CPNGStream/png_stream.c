// Row-by-row PNG decoding (see the header). The Swift side feeds each row straight into the resampler,
// so the decoded picture (300 MB for a 100 MP RGB file) never exists.
//
// The direct path, both ways, on a 12 MP photo saved as PNG by ImageMagick (27.7 MB in 847 IDAT
// chunks), decoding only (inflate, unfilter, rows read), -O2, the file in memory, medians of 7
// alternating runs on 2026-11-30: libdeflate inflating the whole image data in one call (after gathering
// the chunks) and unfiltering it in place, 0.176 s CPU and 89.2 MiB peak RSS; zlib's streaming inflate
// a band of about 64 KiB of rows at a time, each row unfiltered as soon as it is out, 0.185 s (+5 %,
// Adler-32 checked) and 28.4 MiB, the file itself being 27.7 MB. The bands are kept: they hold the band,
// one row and zlib's 32 KiB window instead of 64 MB. Whole `attache recompress` figures are in
// docs/BENCHMARKS.md (images.png.*).

#include "attache_png_stream.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include <libdeflate.h>
#include <png.h>
#include <zlib.h>

struct attache_png_stream {
    png_structp png;
    png_infop info;
    jmp_buf jump;
    /// The file in memory, or (data NULL) an open file read with pread, `size` bytes either way.
    const unsigned char *data;
    int fd;
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
    /// The direct path: zlib's state, the next chunk to feed it (its length field) and how many are
    /// left, the bytes of one row in the file and the last row unfiltered (the one above the next).
    z_stream zlib;
    int inflating;
    size_t next_chunk;
    size_t chunks_left;
    /// The chunk being fed: where its unread data starts, how much is left, its CRC so far.
    size_t chunk_at;
    size_t chunk_left;
    uint32_t chunk_crc;
    /// A piece of the file read from `fd` (INPUT_BYTES).
    unsigned char *input;
    size_t row_bytes;
    int bpp;
    int direct_rows;
    unsigned char *previous;
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

// The most bytes of a file read at once into the input buffer.
#define INPUT_BYTES ((size_t)64 * 1024)

// Copies `length` bytes at `offset` into `out`: -1 when the file has fewer (it may have shrunk since it was
// measured) or cannot be read.
static int fetch(const struct attache_png_stream *stream, size_t offset, unsigned char *out, size_t length) {
    if (offset > stream->size || length > stream->size - offset) return -1;
    if (stream->data) {
        memcpy(out, stream->data + offset, length);
        return 0;
    }
    while (length > 0) {
        ssize_t n = pread(stream->fd, out, length, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        out += n;
        offset += (size_t)n;
        length -= (size_t)n;
    }
    return 0;
}

// `length` (at most INPUT_BYTES) bytes at `offset`: in place in memory, or read into the input buffer
// (valid until the next call). NULL when they cannot be had.
static const unsigned char *view(struct attache_png_stream *stream, size_t offset, size_t length) {
    if (stream->data) {
        return offset <= stream->size && length <= stream->size - offset ? stream->data + offset : NULL;
    }
    if (!stream->input && !(stream->input = malloc(INPUT_BYTES))) return NULL;
    if (length > INPUT_BYTES || fetch(stream, offset, stream->input, length) != 0) return NULL;
    return stream->input;
}

static void read_data(png_structp png, png_bytep out, size_t length) {
    struct attache_png_stream *stream = png_get_io_ptr(png);
    if (fetch(stream, stream->offset, out, length) != 0) {
        stream->truncated = 1;
        snprintf(stream->message, sizeof stream->message, "the data ends before the image does");
        png_error(png, "unexpected end of data");
    }
    stream->offset += length;
}

static attache_png_stream *create(const unsigned char *data, int fd, size_t size) {
    struct attache_png_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NULL;
    stream->data = data;
    stream->fd = fd;
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

attache_png_stream *attache_png_stream_create(const unsigned char *data, size_t size) {
    // An empty Swift array has no storage: nothing to read, which libpng reports as truncated.
    static const unsigned char empty[1];
    return data ? create(data, -1, size) : create(empty, -1, 0);
}

attache_png_stream *attache_png_stream_create_file(int fd, size_t size) { return create(NULL, fd, size); }

void attache_png_stream_destroy(attache_png_stream *stream) {
    if (!stream) return;
    if (stream->inflating) inflateEnd(&stream->zlib);
    free(stream->previous);
    free(stream->input);
    png_destroy_read_struct(&stream->png, &stream->info, NULL);
    free(stream);
}

static void find_direct(struct attache_png_stream *stream, attache_png_stream_info *info, int bit_depth,
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
    find_direct(stream, info, bit_depth, color_type);
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
static void find_direct(struct attache_png_stream *stream, attache_png_stream_info *info, int bit_depth,
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
    unsigned char head[8];
    if (offset < 8 || fetch(stream, offset - 8, head, 8) != 0 || memcmp(head + 4, "IDAT", 4) != 0) return;
    size_t at = offset - 8, chunks = 0, total = 0;
    while (fetch(stream, at, head, 8) == 0 && memcmp(head + 4, "IDAT", 4) == 0) {
        uint32_t length = big_endian32(head);
        if (length > 0x7FFFFFFFu || stream->size - at < 12 || length > stream->size - at - 12) return; // cut off: libpng says how
        total += length;
        chunks++;
        at += 12 + (size_t)length;
    }
    stream->idat_start = offset - 8;
    stream->idat_chunks = chunks;
    stream->idat_bytes = total;
    stream->bpp = channels;
    stream->row_bytes = (size_t)info->width * (size_t)channels;
    info->direct = 1;
    info->file_channels = channels;
    info->compressed_bytes = total;
}

static int direct_failure(struct attache_png_stream *stream, const char *text) {
    snprintf(stream->message, sizeof stream->message, "%s", text);
    return ATTACHE_PNG_ERROR;
}

// The next piece (at most INPUT_BYTES) of the image data, in `*piece`, `*length`: the IDAT chunks' data
// one after the other. Each chunk's CRC (over its type and data) is checked as its last piece is taken,
// before that piece is used: libpng checks it at the same point.
static int next_piece(struct attache_png_stream *stream, const unsigned char **piece, size_t *length) {
    while (stream->chunk_left == 0) {
        if (stream->chunks_left == 0) return direct_failure(stream, "Not enough image data");
        unsigned char head[8];
        if (fetch(stream, stream->next_chunk, head, 8) != 0) return direct_failure(stream, "unexpected end of data");
        stream->chunk_at = stream->next_chunk + 8;
        stream->chunk_left = big_endian32(head);
        stream->chunk_crc = (uint32_t)libdeflate_crc32(0, head + 4, 4);
        stream->next_chunk = stream->chunk_at + stream->chunk_left + 4;
        stream->chunks_left--;
        if (stream->chunk_left == 0) {
            unsigned char crc[4];
            if (fetch(stream, stream->chunk_at, crc, 4) != 0 || big_endian32(crc) != stream->chunk_crc) {
                return direct_failure(stream, "IDAT: CRC error");
            }
        }
    }
    size_t size = stream->chunk_left < INPUT_BYTES ? stream->chunk_left : INPUT_BYTES;
    const unsigned char *p = view(stream, stream->chunk_at, size);
    if (!p) return direct_failure(stream, "unexpected end of data");
    // libdeflate's CRC-32 uses the carry-less multiply: a tenth of zlib's time for it.
    stream->chunk_crc = (uint32_t)libdeflate_crc32(stream->chunk_crc, p, size);
    stream->chunk_at += size;
    stream->chunk_left -= size;
    if (stream->chunk_left == 0) {
        unsigned char crc[4];
        if (fetch(stream, stream->chunk_at, crc, 4) != 0 || big_endian32(crc) != stream->chunk_crc) {
            return direct_failure(stream, "IDAT: CRC error");
        }
    }
    *piece = p;
    *length = size;
    return ATTACHE_PNG_OK;
}

static int feed(struct attache_png_stream *stream) {
    const unsigned char *piece;
    size_t length;
    int status = next_piece(stream, &piece, &length);
    if (status != ATTACHE_PNG_OK) return status;
    stream->zlib.next_in = (unsigned char *)(uintptr_t)piece;
    stream->zlib.avail_in = (uInt)length;
    return ATTACHE_PNG_OK;
}

// After the last row, what libpng reads too: the rest of the zlib stream and the rest of the chunk it
// ends in, whose CRC must match. libpng only warns about some errors there and not others (it depends
// on where the stream ends): any error gives up, and libpng's rows decide.
static int finish_image_data(struct attache_png_stream *stream) {
    z_stream *zlib = &stream->zlib;
    unsigned char scratch[1024];
    for (;;) {
        if (zlib->avail_in == 0) {
            if (stream->chunk_left == 0 && stream->chunks_left == 0) return ATTACHE_PNG_OK;
            int status = feed(stream);
            if (status != ATTACHE_PNG_OK) return status;
        }
        zlib->next_out = scratch;
        zlib->avail_out = sizeof scratch;
        int result = inflate(zlib, Z_NO_FLUSH);
        if (result == Z_STREAM_END) break;
        if (result == Z_BUF_ERROR && zlib->avail_in == 0) continue;
        if (result != Z_OK) return direct_failure(stream, zlib->msg ? zlib->msg : "zlib error");
    }
    while (stream->chunk_left > 0) {
        const unsigned char *piece;
        size_t length;
        int status = next_piece(stream, &piece, &length);
        if (status != ATTACHE_PNG_OK) return status;
    }
    return ATTACHE_PNG_OK;
}

int attache_png_stream_direct_rows(attache_png_stream *stream, unsigned char *band, int count) {
    if (!stream->started || stream->idat_chunks == 0 || count < 0 || count > stream->height - stream->direct_rows
        || stream->rows_read != 0) {
        return direct_failure(stream, "no such rows");
    }
    size_t stride = 1 + stream->row_bytes;
    if (!stream->inflating) {
        stream->previous = calloc(stream->row_bytes ? stream->row_bytes : 1, 1);
        if (!stream->previous) return direct_failure(stream, "out of memory");
        memset(&stream->zlib, 0, sizeof stream->zlib);
        if (inflateInit(&stream->zlib) != Z_OK) return direct_failure(stream, "out of memory");
        stream->inflating = 1;
        stream->next_chunk = stream->idat_start;
        stream->chunks_left = stream->idat_chunks;
        stream->chunk_left = 0;
    }
    z_stream *zlib = &stream->zlib;
    zlib->next_out = band;
    size_t wanted = (size_t)count * stride;
    // avail_out is 32-bit: a band is a few rows, far below that.
    if (wanted > 0xFFFFFFFFu) return direct_failure(stream, "band too large");
    zlib->avail_out = (uInt)wanted;
    while (zlib->avail_out > 0) {
        if (zlib->avail_in == 0) {
            int status = feed(stream);
            if (status != ATTACHE_PNG_OK) return status;
        }
        // zlib goes on past the band's last byte to whatever needs no output (the Adler-32 after the
        // last row): an error there is an error, as it is for libpng in the same call.
        int result = inflate(zlib, Z_NO_FLUSH);
        if (result == Z_STREAM_END) {
            if (zlib->avail_out == 0) break;
            return direct_failure(stream, "Not enough image data");
        }
        if (result == Z_BUF_ERROR && zlib->avail_in == 0) continue;
        if (result != Z_OK) return direct_failure(stream, zlib->msg ? zlib->msg : "zlib error");
    }
    for (int i = 0; i < count; i++) {
        unsigned char *row = band + (size_t)i * stride;
        const unsigned char *above = i == 0 ? stream->previous : row - stride + 1;
        if (attache_png_unfilter_row(row + 1, above, stream->row_bytes, stream->bpp, row[0]) != ATTACHE_PNG_OK) {
            return direct_failure(stream, "bad adaptive filter value");
        }
    }
    if (count > 0) memcpy(stream->previous, band + (size_t)(count - 1) * stride + 1, stream->row_bytes);
    stream->direct_rows += count;
    if (stream->direct_rows == stream->height) return finish_image_data(stream);
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
