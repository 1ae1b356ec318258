#ifndef ATTACHE_COPENSSL_SHIM_H
#define ATTACHE_COPENSSL_SHIM_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

// OPENSSL_free is a macro that forwards file/line to CRYPTO_free.
static inline void attache_openssl_free(void *p) { OPENSSL_free(p); }

// HMAC through EVP_MAC takes its digest name in an OSSL_PARAM array, which is built with C macros.
static inline int attache_hmac_sha256_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen) {
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    return EVP_MAC_init(ctx, key, keylen, params);
}

// The AEAD tag controls are macros that Swift imports only through their numeric values.
static inline int attache_cipher_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int len) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, len, tag);
}

// Same reason as attache_cipher_get_tag: EVP_CTRL_AEAD_SET_TAG is a macro.
static inline int attache_cipher_set_tag(EVP_CIPHER_CTX *ctx, const unsigned char *tag, int len) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, len, (void *)tag);
}

#endif
