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

#endif
