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

// OpenSSL 3 looks an algorithm up again on every init given EVP_sha256(); fetching it once per
// process removes that lookup (and its lock) from every small hash. A thread that loses the race to
// publish its fetch frees it.
static inline const EVP_MD *attache_sha256(void) {
    static EVP_MD *cached = NULL;
    EVP_MD *md = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (md == NULL) {
        EVP_MD *fetched = EVP_MD_fetch(NULL, "SHA2-256", NULL);
        EVP_MD *expected = NULL;
        if (fetched == NULL) return EVP_sha256();
        if (__atomic_compare_exchange_n(&cached, &expected, fetched, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            md = fetched;
        } else {
            EVP_MD_free(fetched);
            md = expected;
        }
    }
    return md;
}

// Same reason as attache_sha256, for the cipher of every stream-gcm context.
static inline const EVP_CIPHER *attache_aes_256_gcm(void) {
    static EVP_CIPHER *cached = NULL;
    EVP_CIPHER *cipher = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (cipher == NULL) {
        EVP_CIPHER *fetched = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
        EVP_CIPHER *expected = NULL;
        if (fetched == NULL) return EVP_aes_256_gcm();
        if (__atomic_compare_exchange_n(&cached, &expected, fetched, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            cipher = fetched;
        } else {
            EVP_CIPHER_free(fetched);
            cipher = expected;
        }
    }
    return cipher;
}

#endif
