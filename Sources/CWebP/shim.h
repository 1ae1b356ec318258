#ifndef ATTACHE_CWEBP_SHIM_H
#define ATTACHE_CWEBP_SHIM_H

#include <webp/decode.h>
#include <webp/encode.h>

// WebPConfigInit, WebPPictureInit and WebPGetFeatures are static inline functions that pass
// the ABI version macro; wrapped so the call sites stay plain.
static inline int attache_webp_config_init(WebPConfig *config) { return WebPConfigInit(config); }
static inline int attache_webp_config_preset(WebPConfig *config, WebPPreset preset, float quality) {
    return WebPConfigPreset(config, preset, quality);
}
static inline int attache_webp_picture_init(WebPPicture *picture) { return WebPPictureInit(picture); }
static inline VP8StatusCode attache_webp_get_features(const uint8_t *data, size_t size, WebPBitstreamFeatures *features) {
    return WebPGetFeatures(data, size, features);
}
static inline int attache_webp_init_decoder_config(WebPDecoderConfig *config) { return WebPInitDecoderConfig(config); }

#endif
