// Streaming raw-YCbCr JPEG decoding (see the header). The Swift side feeds each row group straight into
// the resampler, so the decoded planes of a 12 MP photo (10 MB at 3/4 scale) never exist at once.

#include "attache_jpeg_stream.h"
#include "attache_idct6.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
// For struct jpeg_inverse_dct: the per-component IDCT choice is corrected after start (see below),
// as TurboJPEG does for its own planar decode.
#include <jpegint.h>

#if JPEG_LIB_VERSION >= 70
#define MIN_SCALED(cinfo) ((cinfo)->min_DCT_h_scaled_size)
#define COMP_SCALED(comp) ((comp)->DCT_h_scaled_size)
#define SET_COMP_SCALED(comp, size) ((comp)->DCT_h_scaled_size = (comp)->DCT_v_scaled_size = (size))
#else
#define MIN_SCALED(cinfo) ((cinfo)->min_DCT_scaled_size)
#define COMP_SCALED(comp) ((comp)->DCT_scaled_size)
#define SET_COMP_SCALED(comp, size) ((comp)->DCT_scaled_size = (size))
#endif

struct attache_jpeg_stream {
    // First member, so that the libjpeg callbacks can get back to the stream from their cinfo.
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_progress_mgr progress;
    jmp_buf jump;
    int created;
    int started;
    int max_scans;
    int truncated;
    int too_many_scans;
    int message_code;
    char message[JMSG_LENGTH_MAX];
    int components;
    int lines_per_read;
    JSAMPARRAY rows[3];
};

static void on_error(j_common_ptr cinfo) {
    struct attache_jpeg_stream *stream = (struct attache_jpeg_stream *)cinfo;
    stream->message_code = cinfo->err->msg_code;
    (*cinfo->err->format_message)(cinfo, stream->message);
    longjmp(stream->jump, 1);
}

// Warnings are kept (the last one's text) but do not stop decoding, except running out of data: libjpeg
// would go on and fill the rest of the picture with grey, and a cut-off photo must be refused instead.
static void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    struct attache_jpeg_stream *stream = (struct attache_jpeg_stream *)cinfo;
    cinfo->err->num_warnings++;
    stream->message_code = cinfo->err->msg_code;
    (*cinfo->err->format_message)(cinfo, stream->message);
    // JWRN_HIT_MARKER: the scan data ended (at a marker) before the picture did, as when a header
    // declares more pixels than the data holds. Both would come back as grey.
    if (cinfo->err->msg_code == JWRN_JPEG_EOF || cinfo->err->msg_code == JWRN_HIT_MARKER) stream->truncated = 1;
}

// Each progressive scan is a full pass over the coefficients: a crafted file with thousands of tiny
// scans would cost minutes. The marker walk in Swift already counts scans; this is the second line.
static void on_progress(j_common_ptr cinfo) {
    struct attache_jpeg_stream *stream = (struct attache_jpeg_stream *)cinfo;
    if (stream->cinfo.input_scan_number > stream->max_scans) {
        stream->too_many_scans = 1;
        stream->message_code = JERR_NOTIMPL;
        snprintf(stream->message, sizeof stream->message, "more than %d progressive scans", stream->max_scans);
        longjmp(stream->jump, 1);
    }
}

attache_jpeg_stream *attache_jpeg_stream_create(void) {
    struct attache_jpeg_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NULL;
    stream->cinfo.err = jpeg_std_error(&stream->errors);
    stream->errors.error_exit = on_error;
    stream->errors.emit_message = on_message;
    if (setjmp(stream->jump)) {
        free(stream);
        return NULL;
    }
    jpeg_create_decompress(&stream->cinfo);
    stream->created = 1;
    stream->progress.progress_monitor = on_progress;
    stream->cinfo.progress = &stream->progress;
    return stream;
}

void attache_jpeg_stream_destroy(attache_jpeg_stream *stream) {
    if (!stream) return;
    if (stream->created) jpeg_destroy_decompress(&stream->cinfo);
    free(stream);
}

static int status_after_warnings(const struct attache_jpeg_stream *stream) {
    return stream->truncated ? ATTACHE_JPEG_TRUNCATED : ATTACHE_JPEG_OK;
}

// After a longjmp: the end of the data explains most errors that follow it, so it is reported first.
static int status_after_error(const struct attache_jpeg_stream *stream) {
    if (stream->truncated) return ATTACHE_JPEG_TRUNCATED;
    if (stream->too_many_scans) return ATTACHE_JPEG_TOO_MANY_SCANS;
    return ATTACHE_JPEG_ERROR;
}

int attache_jpeg_stream_start(attache_jpeg_stream *stream, const unsigned char *data, size_t size,
                              int scale_num, int max_scans, attache_jpeg_stream_info *info) {
    struct jpeg_decompress_struct *cinfo = &stream->cinfo;
    memset(info, 0, sizeof *info);
    if (stream->started || size == 0 || scale_num < 1 || scale_num > 8) {
        snprintf(stream->message, sizeof stream->message, "bad arguments");
        return ATTACHE_JPEG_ERROR;
    }
    stream->started = 1;
    stream->max_scans = max_scans;
    if (setjmp(stream->jump)) return status_after_error(stream);

    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_read_header(cinfo, TRUE);
    if (stream->truncated) return ATTACHE_JPEG_TRUNCATED;
    int gray = cinfo->jpeg_color_space == JCS_GRAYSCALE && cinfo->num_components == 1;
    int ycc = cinfo->jpeg_color_space == JCS_YCbCr && cinfo->num_components == 3;
    if (!gray && !ycc) return ATTACHE_JPEG_UNSUPPORTED;
    int max_h = cinfo->max_h_samp_factor, max_v = cinfo->max_v_samp_factor;
    for (int c = 0; c < cinfo->num_components; c++) {
        jpeg_component_info *comp = &cinfo->comp_info[c];
        if (max_h % comp->h_samp_factor != 0 || max_v % comp->v_samp_factor != 0) return ATTACHE_JPEG_UNSUPPORTED;
    }

    cinfo->raw_data_out = TRUE;
    cinfo->out_color_space = cinfo->jpeg_color_space;
    cinfo->dct_method = JDCT_ISLOW;  // never the fast IDCT (docs/DESIGN.md)
    cinfo->scale_num = (unsigned int)scale_num;
    cinfo->scale_denom = 8;
    jpeg_start_decompress(cinfo);
    if (stream->truncated) return ATTACHE_JPEG_TRUNCATED;

    // libjpeg reconstructs subsampled chroma at a larger IDCT size than luma (12×12 at 3/4 scale), which
    // upsamples it for free when converting to RGB. Raw planes want chroma at its own resolution: give
    // every component the luma block size and IDCT, and the matching MCU width. This is what TurboJPEG's
    // planar decode does; the IDCT table of each component does not depend on the block size for ISLOW.
    int size_px = MIN_SCALED(cinfo);
    int reference = -1;
    for (int c = 0; c < cinfo->num_components; c++) {
        if (COMP_SCALED(&cinfo->comp_info[c]) == size_px) { reference = c; break; }
    }
    if (reference < 0) return ATTACHE_JPEG_UNSUPPORTED;
    for (int c = 0; c < cinfo->num_components; c++) {
        jpeg_component_info *comp = &cinfo->comp_info[c];
        if (COMP_SCALED(comp) != size_px) {
            SET_COMP_SCALED(comp, size_px);
            comp->MCU_sample_width = comp->MCU_width * size_px;
            cinfo->idct->inverse_DCT[c] = cinfo->idct->inverse_DCT[reference];
        }
    }

    // At 3/4 scale every block goes through the 6×6 transform, which libjpeg-turbo has only in scalar C.
    if (size_px == 6) {
        attache_idct_method fast = attache_idct6_method();
        if (fast) {
            for (int c = 0; c < cinfo->num_components; c++) cinfo->idct->inverse_DCT[c] = fast;
        }
    }

    stream->components = cinfo->num_components;
    stream->lines_per_read = max_v * size_px;
    info->width = (int)cinfo->output_width;
    info->height = (int)cinfo->output_height;
    info->components = cinfo->num_components;
    for (int c = 0; c < cinfo->num_components; c++) {
        jpeg_component_info *comp = &cinfo->comp_info[c];
        long h = gray ? 1 : comp->h_samp_factor, v = gray ? 1 : comp->v_samp_factor;
        long mh = gray ? 1 : max_h, mv = gray ? 1 : max_v;
        info->plane_width[c] = (int)(((long)cinfo->image_width * h * size_px + mh * DCTSIZE - 1) / (mh * DCTSIZE));
        info->plane_height[c] = (int)(((long)cinfo->image_height * v * size_px + mv * DCTSIZE - 1) / (mv * DCTSIZE));
        info->rows_per_read[c] = comp->v_samp_factor * size_px;
        JDIMENSION row_width = comp->width_in_blocks * (JDIMENSION)size_px;
        stream->rows[c] = (*cinfo->mem->alloc_sarray)((j_common_ptr)cinfo, JPOOL_IMAGE, row_width,
                                                     (JDIMENSION)info->rows_per_read[c]);
    }
    return ATTACHE_JPEG_OK;
}

int attache_jpeg_stream_read(attache_jpeg_stream *stream) {
    struct jpeg_decompress_struct *cinfo = &stream->cinfo;
    if (!stream->started || stream->components == 0 || cinfo->output_scanline >= cinfo->output_height) {
        snprintf(stream->message, sizeof stream->message, "no more rows to read");
        return ATTACHE_JPEG_ERROR;
    }
    if (setjmp(stream->jump)) return status_after_error(stream);
    if (jpeg_read_raw_data(cinfo, stream->rows, (JDIMENSION)stream->lines_per_read) == 0) {
        snprintf(stream->message, sizeof stream->message, "the decoder returned no rows");
        return ATTACHE_JPEG_ERROR;
    }
    return status_after_warnings(stream);
}

const unsigned char *attache_jpeg_stream_row(const attache_jpeg_stream *stream, int component, int row) {
    return stream->rows[component][row];
}

int attache_jpeg_stream_finish(attache_jpeg_stream *stream) {
    if (setjmp(stream->jump)) return status_after_error(stream);
    jpeg_finish_decompress(&stream->cinfo);
    return status_after_warnings(stream);
}

const char *attache_jpeg_stream_message(const attache_jpeg_stream *stream) { return stream->message; }

int attache_jpeg_stream_message_code(const attache_jpeg_stream *stream) { return stream->message_code; }
