// Row-by-row PNG decoding with libpng's own API, for the Transform stage.
//
// libpng reports fatal errors by calling a handler that must not return; Swift cannot unwind through C
// frames, so every call that may fail is wrapped here in its own setjmp and returns a status code plus a
// message instead. No libpng type appears in this header.

#ifndef ATTACHE_PNG_STREAM_H
#define ATTACHE_PNG_STREAM_H

#include <stddef.h>

/// Status codes of the functions below.
enum {
    ATTACHE_PNG_OK = 0,
    /// libpng refused the data; attache_png_stream_message() says why.
    ATTACHE_PNG_ERROR = 1,
    /// The data ended before the image did.
    ATTACHE_PNG_TRUNCATED = 2,
};

/// What attache_png_stream_start() found, and the rows it will deliver.
typedef struct {
    int width;
    int height;
    /// Samples per pixel of every delivered row: 1 (grey), 3 (RGB) or 4 (RGBA, straight alpha); always
    /// 8-bit sRGB-encoded.
    int channels;
    /// Adam7: rows can only be had all at once (attache_png_stream_read_image).
    int interlaced;
    /// The file's own bit depth and colour type, for tests and messages.
    int bit_depth;
    int color_type;
} attache_png_stream_info;

typedef struct attache_png_stream attache_png_stream;

/// A new decoder for `data` (which must stay valid until destroy), or NULL when memory is short.
attache_png_stream *attache_png_stream_create(const unsigned char *data, size_t size);
void attache_png_stream_destroy(attache_png_stream *stream);

/// Reads the chunks up to the image data and sets up the conversion to 8-bit sRGB rows with the same
/// transformations libpng's simplified API applies (palette and low bit depths expanded, tRNS to alpha,
/// 16-bit scaled, gAMA honoured, grey with alpha made RGBA), except that opaque grey stays one channel.
int attache_png_stream_start(attache_png_stream *stream, attache_png_stream_info *info);

/// Decodes the next `count` rows of a non-interlaced image into `rows` (`stride` bytes apart).
int attache_png_stream_read_rows(attache_png_stream *stream, unsigned char *rows, int count, size_t stride);

/// Nothing after the last row is read: like libpng's simplified API (and browsers), a file whose
/// picture is complete is accepted even when its end (the rest of the zlib stream, IEND) is damaged.

/// Decodes a whole interlaced image into `buffer` (height rows, `stride` bytes apart).
int attache_png_stream_read_image(attache_png_stream *stream, unsigned char *buffer, size_t stride);

/// The text of the last error, empty when there was none.
const char *attache_png_stream_message(const attache_png_stream *stream);

/// The number of bytes libpng allocated through this decoder and still holds, and the most it held at
/// once: what a test checks to know that no whole picture was ever allocated.
size_t attache_png_stream_allocated(const attache_png_stream *stream);
size_t attache_png_stream_peak_allocated(const attache_png_stream *stream);

#endif
