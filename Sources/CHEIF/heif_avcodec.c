// A libheif decoder plugin for HEVC backed by FFmpeg's libavcodec (FFmpeg 5.1: libavcodec.so.59,
// libavutil.so.57), both opened with dlopen so that nothing links them and a machine without FFmpeg keeps
// libheif's own libde265 decoder.
//
// libheif hands the plugin the item's bitstream as NAL units, each after a 4-byte big-endian length: the
// parameter sets from the hvcC box first, then the picture's own NAL units. The plugin rewrites them as an
// Annex-B stream (start codes), decodes the one picture on the calling thread, and copies its planes into
// a YCbCr (or monochrome) heif_image; libheif does everything else.

#include "heif_avcodec.h"

#include <dlfcn.h>
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The libraries of the headers this file is compiled with: libavcodec.so.59 and libavutil.so.57 on
// Debian 12 (FFmpeg 5.1). The structures read below are those of these major versions.
#define SONAME(name, major) name ".so." AV_STRINGIFY(major)
static const char avcodec_name[] = SONAME("libavcodec", LIBAVCODEC_VERSION_MAJOR);
static const char avutil_name[] = SONAME("libavutil", LIBAVUTIL_VERSION_MAJOR);

// Above libde265's 100, so that libheif picks this plugin for HEVC.
enum { plugin_priority = 120 };

static struct attache_heif_plugin_api heif;

static struct {
    unsigned (*avcodec_version)(void);
    unsigned (*avutil_version)(void);
    const AVCodec *(*find_decoder)(enum AVCodecID);
    AVCodecContext *(*alloc_context)(const AVCodec *);
    int (*open)(AVCodecContext *, const AVCodec *, AVDictionary **);
    void (*free_context)(AVCodecContext **);
    AVPacket *(*packet_alloc)(void);
    void (*packet_free)(AVPacket **);
    int (*new_packet)(AVPacket *, int);
    int (*send_packet)(AVCodecContext *, const AVPacket *);
    int (*receive_frame)(AVCodecContext *, AVFrame *);
    AVFrame *(*frame_alloc)(void);
    void (*frame_free)(AVFrame **);
    const AVPixFmtDescriptor *(*pix_fmt_desc_get)(enum AVPixelFormat);
    int (*strerror)(int, char *, size_t);
    const AVCodec *hevc;
} av;

// libheif builds its error from the message only after free_decoder: messages must outlive the decoder.
// Fixed texts are static; those with libavcodec's reason go to a buffer of the decoding thread.
static _Thread_local char error_text[192];

static struct heif_error failure(enum heif_error_code code, enum heif_suberror_code subcode, const char *message) {
    struct heif_error error = {code, subcode, message};
    return error;
}

// Damaged data is invalid input (Attache: corrupt-input, the photo goes as it is), a failed allocation a
// memory error (limit-exceeded); anything else, e.g. a stream feature libavcodec lacks, the decoder's
// failure (unsupported-input), as libheif reports libde265's.
static struct heif_error avcodec_failure(const char *what, int status) {
    char reason[128] = "";
    if (av.strerror(status, reason, sizeof reason) < 0) snprintf(reason, sizeof reason, "error %d", status);
    snprintf(error_text, sizeof error_text, "libavcodec: %s: %s", what, reason);
    enum heif_error_code code = status == AVERROR_INVALIDDATA ? heif_error_Invalid_input
                                : status == AVERROR(ENOMEM)   ? heif_error_Memory_allocation_error
                                                              : heif_error_Decoder_plugin_error;
    return failure(code, heif_suberror_Unspecified, error_text);
}

_Thread_local unsigned long attache_avcodec_pictures = 0;

static const struct heif_error success = {heif_error_Ok, heif_suberror_Unspecified, "Success"};

static const char *plugin_name(void) { return "FFmpeg libavcodec HEVC decoder"; }

static int does_support_format(enum heif_compression_format format) {
    return format == heif_compression_HEVC ? plugin_priority : 0;
}

struct decoder {
    uint8_t *stream;  // Annex-B: 00 00 00 01 before each NAL unit
    size_t size, capacity;
    int strict;
};

static struct heif_error new_decoder(void **out) {
    struct decoder *decoder = calloc(1, sizeof *decoder);
    *out = decoder;
    if (decoder == NULL) return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory");
    return success;
}

static void free_decoder(void *raw) {
    struct decoder *decoder = raw;
    if (decoder == NULL) return;
    free(decoder->stream);
    free(decoder);
}

static void set_strict_decoding(void *raw, int flag) { ((struct decoder *)raw)->strict = flag; }

// The packet handed to libavcodec is an int and needs its padding.
static const size_t stream_limit = (size_t)0x7FFFFFFF - AV_INPUT_BUFFER_PADDING_SIZE;

// Appends one NAL unit after a start code.
static struct heif_error append_nal(struct decoder *decoder, const uint8_t *nal, size_t length) {
    if (length + 4 > stream_limit - decoder->size)
        return failure(heif_error_Memory_allocation_error, heif_suberror_Security_limit_exceeded,
                       "HEVC bitstream too large");
    size_t needed = decoder->size + 4 + length;
    if (needed > decoder->capacity) {
        size_t capacity = decoder->capacity < stream_limit / 2 ? decoder->capacity * 2 : stream_limit;
        if (capacity < needed) capacity = needed;
        uint8_t *grown = realloc(decoder->stream, capacity);
        if (grown == NULL) return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory");
        decoder->stream = grown;
        decoder->capacity = capacity;
    }
    uint8_t *out = decoder->stream + decoder->size;
    out[0] = 0;
    out[1] = 0;
    out[2] = 0;
    out[3] = 1;
    memcpy(out + 4, nal, length);
    decoder->size = needed;
    return success;
}

static struct heif_error push_data(void *raw, const void *data, size_t size) {
    struct decoder *decoder = raw;
    const uint8_t *bytes = data;
    size_t at = 0;
    while (at < size) {
        if (size - at < 4)
            return failure(heif_error_Invalid_input, heif_suberror_End_of_data, "truncated NAL unit length");
        size_t length = (size_t)bytes[at] << 24 | (size_t)bytes[at + 1] << 16 | (size_t)bytes[at + 2] << 8 | bytes[at + 3];
        at += 4;
        if (length > size - at)
            return failure(heif_error_Invalid_input, heif_suberror_End_of_data, "NAL unit beyond the data");
        if (length == 0) continue;
        struct heif_error result = append_nal(decoder, bytes + at, length);
        if (result.code != heif_error_Ok) return result;
        at += length;
    }
    return success;
}

// Copies the decoded planes into a new heif_image: YCbCr 4:2:0, 4:2:2 or 4:4:4, or monochrome, 8 to 16 bits
// (libheif, like FFmpeg, keeps samples over 8 bits in 16-bit native-endian words).
static struct heif_error convert(const AVFrame *frame, int width, int height, struct heif_image **out) {
    const AVPixFmtDescriptor *format = av.pix_fmt_desc_get(frame->format);
    const uint64_t refused = AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM
                             | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_ALPHA
                             | AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT;
    if (format == NULL || (format->flags & refused) != 0 || (format->nb_components != 1 && format->nb_components != 3))
        return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_color_conversion,
                       "libavcodec decoded a pixel format the plugin does not take");
    int components = format->nb_components;
    int depth = format->comp[0].depth;
    int sample_bytes = depth > 8 ? 2 : 1;
    for (int c = 0; c < components; c++) {
        const AVComponentDescriptor *component = &format->comp[c];
        if (component->plane != c || component->step != sample_bytes || component->offset != 0
            || component->shift != 0 || component->depth != depth)
            return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_color_conversion,
                           "libavcodec decoded a pixel format the plugin does not take");
    }
    if (depth < 8 || depth > 16)
        return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_bit_depth,
                       "libavcodec decoded an unsupported bit depth");
    enum heif_colorspace colorspace = heif_colorspace_monochrome;
    enum heif_chroma chroma = heif_chroma_monochrome;
    int shift_x = format->log2_chroma_w, shift_y = format->log2_chroma_h;
    if (components == 3) {
        colorspace = heif_colorspace_YCbCr;
        if (shift_x == 1 && shift_y == 1) chroma = heif_chroma_420;
        else if (shift_x == 1 && shift_y == 0) chroma = heif_chroma_422;
        else if (shift_x == 0 && shift_y == 0) chroma = heif_chroma_444;
        else
            return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_color_conversion,
                           "libavcodec decoded an unsupported chroma subsampling");
    }

    struct heif_image *image = NULL;
    struct heif_error error = heif.image_create(width, height, colorspace, chroma, &image);
    if (error.code != heif_error_Ok) return error;
    static const enum heif_channel channels[3] = {heif_channel_Y, heif_channel_Cb, heif_channel_Cr};
    for (int c = 0; c < components; c++) {
        int plane_width = c == 0 ? width : -((-width) >> shift_x);
        int plane_height = c == 0 ? height : -((-height) >> shift_y);
        size_t row_bytes = (size_t)plane_width * (size_t)sample_bytes;
        if (frame->data[c] == NULL || frame->linesize[c] < 0 || (size_t)frame->linesize[c] < row_bytes) {
            heif.image_release(image);
            return failure(heif_error_Decoder_plugin_error, heif_suberror_Unspecified,
                           "libavcodec returned a plane smaller than the picture");
        }
        error = heif.image_add_plane(image, channels[c], plane_width, plane_height, depth);
        if (error.code != heif_error_Ok) {
            heif.image_release(image);
            return error;
        }
        int stride = 0;
        uint8_t *target = heif.image_get_plane(image, channels[c], &stride);
        if (target == NULL || stride < 0 || (size_t)stride < row_bytes) {
            heif.image_release(image);
            return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "libheif has no plane");
        }
        const uint8_t *source = frame->data[c];
        for (int y = 0; y < plane_height; y++)
            memcpy(target + (size_t)y * (size_t)stride, source + (size_t)y * (size_t)frame->linesize[c], row_bytes);
    }

    // As libheif's libde265 plugin does: the stream's own colour description (a colr box in the file, if
    // any, replaces it later). FFmpeg's enums carry the ITU-T H.273 code points.
    struct heif_color_profile_nclx *nclx = heif.nclx_alloc();
    if (nclx != NULL) {
        // A value libheif does not know becomes "unspecified".
        heif.nclx_set_primaries(nclx, (uint16_t)frame->color_primaries);
        heif.nclx_set_transfer(nclx, (uint16_t)frame->color_trc);
        heif.nclx_set_matrix(nclx, (uint16_t)frame->colorspace);
        nclx->full_range_flag = frame->color_range == AVCOL_RANGE_JPEG;
        heif.image_set_nclx(image, nclx);
        heif.nclx_free(nclx);
    }
    *out = image;
    return success;
}

// Decodes the one picture of `decoder`'s stream into `frame`, on the calling thread.
static struct heif_error decode_frame(const struct decoder *decoder, AVFrame *frame) {
    if (decoder->size == 0)
        return failure(heif_error_Invalid_input, heif_suberror_End_of_data, "no HEVC data");
    AVCodecContext *context = av.alloc_context(av.hevc);
    AVPacket *packet = av.packet_alloc();
    struct heif_error result = success;
    int status;
    if (context == NULL || packet == NULL) {
        result = failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory");
        goto done;
    }
    // One picture, decoded on this thread: libheif already decodes grid tiles in parallel.
    context->thread_count = 1;
    // Damaged input is reported through the result; keep libavcodec's own messages below the default level.
    context->log_level_offset = 64;
    if (decoder->strict) context->err_recognition |= AV_EF_EXPLODE;
    if ((status = av.open(context, av.hevc, NULL)) < 0) {
        result = avcodec_failure("cannot open the HEVC decoder", status);
        goto done;
    }
    if ((status = av.new_packet(packet, (int)decoder->size)) < 0) {
        result = avcodec_failure("cannot allocate the packet", status);
        goto done;
    }
    memcpy(packet->data, decoder->stream, decoder->size);
    status = av.send_packet(context, packet);
    if (status < 0) {
        result = avcodec_failure("cannot decode the HEVC picture", status);
        goto done;
    }
    // End of stream: the decoder hands out the picture it may still hold for reordering.
    av.send_packet(context, NULL);
    status = av.receive_frame(context, frame);
    if (status < 0) {
        result = status == AVERROR_EOF
                     ? failure(heif_error_Invalid_input, heif_suberror_End_of_data, "libavcodec: no picture in the HEVC data")
                     : avcodec_failure("cannot decode the HEVC picture", status);
        goto done;
    }
    if (decoder->strict && ((frame->flags & AV_FRAME_FLAG_CORRUPT) != 0 || frame->decode_error_flags != 0)) {
        result = failure(heif_error_Invalid_input, heif_suberror_Unspecified, "libavcodec: the HEVC picture is damaged");
        goto done;
    }
    // The picture must be the size the parameter sets announce (after the conformance window).
    if (frame->width <= 0 || frame->height <= 0 || frame->width != context->width || frame->height != context->height) {
        result = failure(heif_error_Invalid_input, heif_suberror_Unspecified,
                         "libavcodec: the picture's size does not match its parameter sets");
        goto done;
    }
    attache_avcodec_pictures += 1;
done:
    av.packet_free(&packet);
    av.free_context(&context);
    return result;
}

static struct heif_error decode_image(void *raw, struct heif_image **out) {
    *out = NULL;
    AVFrame *frame = av.frame_alloc();
    if (frame == NULL) return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory");
    struct heif_error result = decode_frame(raw, frame);
    if (result.code == heif_error_Ok) result = convert(frame, frame->width, frame->height, out);
    av.frame_free(&frame);
    return result;
}

// ---- Pictures decoded for heif.c (grid tiles) --------------------------------------------------------------

int attache_avcodec_available(void) { return av.hevc != NULL; }

void attache_avcodec_picture_free(struct attache_avcodec_picture *picture) {
    AVFrame *frame = picture->frame;
    if (frame != NULL) av.frame_free(&frame);
    picture->frame = NULL;
}

struct heif_error attache_avcodec_decode_item(const uint8_t *hvcc, size_t hvcc_size, const uint8_t *data, size_t size,
                                              struct attache_avcodec_picture *out) {
    memset(out, 0, sizeof *out);
    if (av.hevc == NULL) return failure(heif_error_Unsupported_feature, heif_suberror_Unspecified, "no libavcodec");
    struct decoder decoder = {NULL, 0, 0, 0};
    struct heif_error result = success;
    static const char truncated[] = "the hvcC box is truncated";
    // hvcC (ISO/IEC 14496-15, 8.3.3.1.2): 23 bytes, then arrays of parameter sets, each NAL unit after a
    // 2-byte length. They go first, then the item's NAL units, each after a length of `length_size` bytes.
    if (hvcc_size < 23) return failure(heif_error_Invalid_input, heif_suberror_End_of_data, truncated);
    size_t length_size = (size_t)(hvcc[21] & 3) + 1, at = 23;
    for (unsigned arrays = hvcc[22]; arrays > 0 && result.code == heif_error_Ok; arrays--) {
        if (hvcc_size - at < 3) {
            result = failure(heif_error_Invalid_input, heif_suberror_End_of_data, truncated);
            break;
        }
        unsigned count = (unsigned)hvcc[at + 1] << 8 | hvcc[at + 2];
        at += 3;
        for (; count > 0 && result.code == heif_error_Ok; count--) {
            size_t nal = hvcc_size - at < 2 ? 0 : (size_t)hvcc[at] << 8 | hvcc[at + 1];
            if (hvcc_size - at < 2 || hvcc_size - at - 2 < nal) {
                result = failure(heif_error_Invalid_input, heif_suberror_End_of_data, truncated);
                break;
            }
            result = append_nal(&decoder, hvcc + at + 2, nal);
            at += 2 + nal;
        }
    }
    for (size_t p = 0; p < size && result.code == heif_error_Ok;) {
        if (size - p < length_size) {
            result = failure(heif_error_Invalid_input, heif_suberror_End_of_data, "truncated NAL unit length");
            break;
        }
        size_t nal = 0;
        for (size_t i = 0; i < length_size; i++) nal = nal << 8 | data[p + i];
        p += length_size;
        if (nal > size - p) {
            result = failure(heif_error_Invalid_input, heif_suberror_End_of_data, "NAL unit beyond the data");
            break;
        }
        if (nal > 0) result = append_nal(&decoder, data + p, nal);
        p += nal;
    }
    AVFrame *frame = NULL;
    if (result.code == heif_error_Ok && (frame = av.frame_alloc()) == NULL)
        result = failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory");
    if (result.code == heif_error_Ok) result = decode_frame(&decoder, frame);
    free(decoder.stream);
    if (result.code != heif_error_Ok) {
        if (frame != NULL) av.frame_free(&frame);
        return result;
    }
    out->frame = frame;
    const AVPixFmtDescriptor *format = av.pix_fmt_desc_get(frame->format);
    const uint64_t refused = AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM
                             | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_ALPHA
                             | AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT;
    int components = format == NULL ? 0 : format->nb_components;
    int depth = components > 0 ? format->comp[0].depth : 0;
    int ok = format != NULL && (format->flags & refused) == 0 && (components == 1 || components == 3) && depth >= 8
             && depth <= 16;
    for (int c = 0; ok && c < components; c++) {
        const AVComponentDescriptor *component = &format->comp[c];
        ok = component->plane == c && component->step == (depth > 8 ? 2 : 1) && component->offset == 0
             && component->shift == 0 && component->depth == depth && frame->data[c] != NULL && frame->linesize[c] > 0;
    }
    if (!ok) {
        attache_avcodec_picture_free(out);
        return failure(heif_error_Unsupported_feature, heif_suberror_Unsupported_color_conversion,
                       "libavcodec decoded a pixel format the plugin does not take");
    }
    out->width = frame->width;
    out->height = frame->height;
    out->components = components;
    out->depth = depth;
    out->shift_x = format->log2_chroma_w;
    out->shift_y = format->log2_chroma_h;
    for (int c = 0; c < components; c++) {
        out->planes[c] = frame->data[c];
        out->strides[c] = frame->linesize[c];
    }
    // H.273 code points, as the stream's VUI gives them (2: unspecified).
    out->matrix = (int)frame->colorspace;
    out->full_range = frame->color_range == AVCOL_RANGE_JPEG;
    return success;
}

static const struct heif_decoder_plugin plugin = {
    .plugin_api_version = 3,
    .get_plugin_name = plugin_name,
    .init_plugin = NULL,
    .deinit_plugin = NULL,
    .does_support_format = does_support_format,
    .new_decoder = new_decoder,
    .free_decoder = free_decoder,
    .push_data = push_data,
    .decode_image = decode_image,
    .set_strict_decoding = set_strict_decoding,
    .id_name = ATTACHE_AVCODEC_PLUGIN_ID,
};

const struct heif_decoder_plugin *attache_avcodec_hevc_plugin(const struct attache_heif_plugin_api *api) {
    // RTLD_LOCAL: nothing else in the process sees these symbols. Never closed once in use.
    void *avutil = dlopen(avutil_name, RTLD_NOW | RTLD_LOCAL);
    if (avutil == NULL) return NULL;
    void *avcodec = dlopen(avcodec_name, RTLD_NOW | RTLD_LOCAL);
    if (avcodec == NULL) {
        dlclose(avutil);
        return NULL;
    }
    if (attache_heif_resolve(avcodec, "avcodec_version", &av.avcodec_version) != 0
        || attache_heif_resolve(avutil, "avutil_version", &av.avutil_version) != 0
        || attache_heif_resolve(avcodec, "avcodec_find_decoder", &av.find_decoder) != 0
        || attache_heif_resolve(avcodec, "avcodec_alloc_context3", &av.alloc_context) != 0
        || attache_heif_resolve(avcodec, "avcodec_open2", &av.open) != 0
        || attache_heif_resolve(avcodec, "avcodec_free_context", &av.free_context) != 0
        || attache_heif_resolve(avcodec, "av_packet_alloc", &av.packet_alloc) != 0
        || attache_heif_resolve(avcodec, "av_packet_free", &av.packet_free) != 0
        || attache_heif_resolve(avcodec, "av_new_packet", &av.new_packet) != 0
        || attache_heif_resolve(avcodec, "avcodec_send_packet", &av.send_packet) != 0
        || attache_heif_resolve(avcodec, "avcodec_receive_frame", &av.receive_frame) != 0
        || attache_heif_resolve(avutil, "av_frame_alloc", &av.frame_alloc) != 0
        || attache_heif_resolve(avutil, "av_frame_free", &av.frame_free) != 0
        || attache_heif_resolve(avutil, "av_pix_fmt_desc_get", &av.pix_fmt_desc_get) != 0
        || attache_heif_resolve(avutil, "av_strerror", &av.strerror) != 0
        || av.avcodec_version() >> 16 != LIBAVCODEC_VERSION_MAJOR
        || av.avutil_version() >> 16 != LIBAVUTIL_VERSION_MAJOR
        || (av.hevc = av.find_decoder(AV_CODEC_ID_HEVC)) == NULL) {
        dlclose(avcodec);
        dlclose(avutil);
        return NULL;
    }
    heif = *api;
    return &plugin;
}
