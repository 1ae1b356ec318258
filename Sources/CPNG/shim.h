#ifndef ATTACHE_CPNG_SHIM_H
#define ATTACHE_CPNG_SHIM_H

#include <png.h>

// png_image's opaque/version fields and PNG_IMAGE_SIZE are macros; wrapped for Swift.
static inline void attache_png_image_init(png_image *image) {
    memset(image, 0, sizeof(*image));
    image->version = PNG_IMAGE_VERSION;
}
static inline png_uint_32 attache_png_image_row_stride(const png_image *image) {
    return PNG_IMAGE_ROW_STRIDE(*image);
}
static inline int attache_png_image_failed(const png_image *image) { return PNG_IMAGE_FAILED(*image); }

#endif
