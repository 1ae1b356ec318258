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
    /// Non-zero when the rows may instead be had from attache_png_stream_direct_rows(): 8-bit grey, grey
    /// with alpha, RGB or RGBA, not interlaced, no tRNS, no gamma correction for libpng to apply, so that
    /// the file's bytes are the delivered samples (grey with alpha is widened to RGBA by the caller).
    int direct;
    /// Bytes per pixel in the file (1, 2, 3 or 4) when direct is set.
    int file_channels;
    /// The compressed image data (every IDAT chunk's payload), read in place.
    size_t compressed_bytes;
} attache_png_stream_info;

typedef struct attache_png_stream attache_png_stream;

/// A new decoder for `data` (which must stay valid until destroy), or NULL when memory is short.
attache_png_stream *attache_png_stream_create(const unsigned char *data, size_t size);

/// A new decoder for the `size` bytes of the file open at `fd` (which must stay open until destroy), read
/// with pread a piece at a time: the file is never held whole. A file that turns out shorter reads as
/// truncated. NULL when memory is short.
attache_png_stream *attache_png_stream_create_file(int fd, size_t size);
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

/// The next `count` rows of a started `direct` stream, inflated by zlib a piece at a time and unfiltered:
/// `band` holds `count` × (1 + width × file_channels) bytes, and row i's samples are at
/// band + i × (1 + width × file_channels) + 1 afterwards (its filter byte before them). Only zlib's state
/// and window and one row (the one above the next band) are held between calls. Each IDAT chunk's CRC is
/// checked as its last piece is taken (where libpng checks it), zlib checks its Adler-32, and after the
/// last row the rest of the image data is read as libpng reads it. ATTACHE_PNG_ERROR for anything amiss
/// (a bad CRC, a damaged or short zlib stream, a filter type that does not exist), with nothing of this
/// band to be used: the caller then goes on with libpng's rows from a new decoder, which refuses or
/// tolerates the file exactly as it does any other.
int attache_png_stream_direct_rows(attache_png_stream *stream, unsigned char *band, int count);

/// Undoes PNG row filter `filter` (0–4) in place on `row` (`size` bytes, `bpp` bytes per pixel), given the
/// already unfiltered row above (all zero for the first row). Byte for byte what libpng computes; SSE2 for
/// 3- and 4-byte pixels. ATTACHE_PNG_ERROR for a filter type that does not exist.
int attache_png_unfilter_row(unsigned char *row, const unsigned char *previous, size_t size, int bpp, int filter);

/// The same in plain C loops, for the tests to hold the vector code to.
int attache_png_unfilter_row_scalar(unsigned char *row, const unsigned char *previous, size_t size, int bpp,
                                    int filter);

/// The text of the last error, empty when there was none.
const char *attache_png_stream_message(const attache_png_stream *stream);

/// The number of bytes libpng allocated through this decoder and still holds, and the most it held at
/// once: what a test checks to know that no whole picture was ever allocated.
size_t attache_png_stream_allocated(const attache_png_stream *stream);
size_t attache_png_stream_peak_allocated(const attache_png_stream *stream);

#endif
