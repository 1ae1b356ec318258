// Streaming JPEG decoding to raw Y/Cb/Cr rows with libjpeg's own API, for the Transform stage.
//
// libjpeg reports fatal errors by calling a handler that must not return; Swift cannot unwind through
// C frames, so every call that may fail is wrapped here in its own setjmp and returns a status code
// plus a message instead. No libjpeg type appears in this header.

#ifndef ATTACHE_JPEG_STREAM_H
#define ATTACHE_JPEG_STREAM_H

#include <stddef.h>

/// Status codes of the functions below.
enum {
    ATTACHE_JPEG_OK = 0,
    /// libjpeg refused the data; attache_jpeg_stream_message() says why.
    ATTACHE_JPEG_ERROR = 1,
    /// A colour space or sampling this decoder does not stream (CMYK, YCCK, RGB, ...).
    ATTACHE_JPEG_UNSUPPORTED = 2,
    /// The data ended before the image did (libjpeg's "Premature end of JPEG file").
    ATTACHE_JPEG_TRUNCATED = 3,
    /// A progressive file with more scans than allowed.
    ATTACHE_JPEG_TOO_MANY_SCANS = 4,
};

/// What attache_jpeg_stream_start() found: the scaled size and each plane's meaningful size.
typedef struct {
    int width;
    int height;
    /// 1 (greyscale) or 3 (Y, Cb, Cr).
    int components;
    int plane_width[3];
    int plane_height[3];
    /// Rows each call to attache_jpeg_stream_read() delivers per plane (the last call may deliver
    /// rows beyond plane_height: padding to skip).
    int rows_per_read[3];
} attache_jpeg_stream_info;

typedef struct attache_jpeg_stream attache_jpeg_stream;

/// A new decoder, or NULL when memory is short.
attache_jpeg_stream *attache_jpeg_stream_create(void);
void attache_jpeg_stream_destroy(attache_jpeg_stream *stream);

/// Reads the header of `data` (which must stay valid until destroy) and starts decoding at
/// `scale_num`/8 of the full size with the accurate integer IDCT. Progressive files are decoded
/// into libjpeg's coefficient buffer here, refusing more than `max_scans` scans.
int attache_jpeg_stream_start(attache_jpeg_stream *stream, const unsigned char *data, size_t size,
                              int scale_num, int max_scans, attache_jpeg_stream_info *info);

/// Decodes the next row of MCUs; afterwards attache_jpeg_stream_row() points into its rows.
int attache_jpeg_stream_read(attache_jpeg_stream *stream);

/// Row `row` (0 ..< rows_per_read) of plane `component` from the last read.
const unsigned char *attache_jpeg_stream_row(const attache_jpeg_stream *stream, int component, int row);

/// Checks the rest of the data up to EOI and ends decoding.
int attache_jpeg_stream_finish(attache_jpeg_stream *stream);

/// The text of the last error or warning, empty when there was none.
const char *attache_jpeg_stream_message(const attache_jpeg_stream *stream);

/// libjpeg's code for the last error or warning (a J_MESSAGE_CODE), 0 when there was none.
int attache_jpeg_stream_message_code(const attache_jpeg_stream *stream);

#endif
