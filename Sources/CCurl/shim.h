#ifndef ATTACHE_CCURL_SHIM_H
#define ATTACHE_CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/types.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call:
// one typed wrapper per argument type the project passes.

static inline CURLcode attache_curl_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_read_function(CURL *h, curl_read_callback f) {
    return curl_easy_setopt(h, CURLOPT_READFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_write_function(CURL *h, curl_write_callback f) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_header_function(CURL *h, curl_write_callback f) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_xferinfo_function(CURL *h, curl_xferinfo_callback f) {
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}

static inline CURLcode attache_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode attache_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode attache_curl_getinfo_double(CURL *h, CURLINFO i, double *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode attache_curl_getinfo_string(CURL *h, CURLINFO i, char **v) {
    return curl_easy_getinfo(h, i, v);
}

// Macros Swift does not import as constants.
static inline size_t attache_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
static inline size_t attache_curl_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
static inline long attache_curl_version_num(void) { return LIBCURL_VERSION_NUM; }

#endif
