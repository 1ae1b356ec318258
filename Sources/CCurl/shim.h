#ifndef ATTACHE_CCURL_SHIM_H
#define ATTACHE_CCURL_SHIM_H

#include <curl/curl.h>
#include <stddef.h>
#include <sys/types.h>

// libcurl is loaded with dlopen on first use rather than linked: a process that only detects,
// encrypts or recompresses then never maps libcurl and the thirty-odd libraries it depends on
// (GnuTLS, Kerberos, LDAP, nghttp2, ...), 8 ms of CPU at every start (Package.swift has the measurement).
// Every libcurl function the project calls goes through this table, filled once by attache_curl_load.

struct attache_curl_functions {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    void (*easy_reset)(CURL *handle);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
    void (*slist_free_all)(struct curl_slist *list);
    CURLcode (*easy_pause)(CURL *handle, int bitmask);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd fds[], unsigned int nfds, int timeout_ms, int *numfds);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *queued);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
    const char *(*multi_strerror)(CURLMcode code);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_setopt)(CURLSH *share, CURLSHoption option, ...);
};

/// The loaded functions; valid only after attache_curl_load returned 0.
extern struct attache_curl_functions attache_curl_api;

/// Loads libcurl and runs curl_global_init, once per process (later calls return the first result).
/// Returns 0 on success, -1 when libcurl cannot be loaded, or curl_global_init's CURLcode when that
/// failed; attache_curl_load_error() then says why. Thread-safe.
int attache_curl_load(void);


/// Why attache_curl_load failed (the dynamic loader's or curl_global_init's text); "" after success.
/// Loads libcurl first if nobody has tried yet.
const char *attache_curl_load_error(void);

/// The file name attache_curl_load opens, for error messages.
const char *attache_curl_library_name(void);

// Wrappers so Swift calls plain functions. The table is read-only once attache_curl_load has
// returned, so these need no locking.

static inline CURL *attache_curl_easy_init(void) { return attache_curl_api.easy_init(); }
static inline void attache_curl_easy_cleanup(CURL *h) { attache_curl_api.easy_cleanup(h); }
static inline void attache_curl_easy_reset(CURL *h) { attache_curl_api.easy_reset(h); }
static inline const char *attache_curl_easy_strerror(CURLcode c) { return attache_curl_api.easy_strerror(c); }
static inline struct curl_slist *attache_curl_slist_append(struct curl_slist *l, const char *s) {
    return attache_curl_api.slist_append(l, s);
}
static inline void attache_curl_slist_free_all(struct curl_slist *l) { attache_curl_api.slist_free_all(l); }

static inline CURLcode attache_curl_easy_pause(CURL *h, int bitmask) { return attache_curl_api.easy_pause(h, bitmask); }

// The multi interface: one event loop drives many transfers (Transport/CurlMultiLoop.swift).
static inline CURLM *attache_curl_multi_init(void) { return attache_curl_api.multi_init(); }
static inline CURLMcode attache_curl_multi_add_handle(CURLM *m, CURL *h) { return attache_curl_api.multi_add_handle(m, h); }
static inline CURLMcode attache_curl_multi_remove_handle(CURLM *m, CURL *h) {
    return attache_curl_api.multi_remove_handle(m, h);
}
static inline CURLMcode attache_curl_multi_perform(CURLM *m, int *running) { return attache_curl_api.multi_perform(m, running); }
static inline CURLMcode attache_curl_multi_poll(CURLM *m, int timeout_ms) {
    return attache_curl_api.multi_poll(m, NULL, 0, timeout_ms, NULL);
}
static inline CURLMcode attache_curl_multi_wakeup(CURLM *m) { return attache_curl_api.multi_wakeup(m); }
static inline const char *attache_curl_multi_strerror(CURLMcode c) { return attache_curl_api.multi_strerror(c); }
static inline CURLMcode attache_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return attache_curl_api.multi_setopt(m, o, v);
}
/// The next finished transfer and its result, or NULL when none is waiting. Skips other messages
/// (libcurl defines none today) so Swift never touches CURLMsg's union.
static inline CURL *attache_curl_multi_next_done(CURLM *m, CURLcode *result) {
    int queued = 0;
    CURLMsg *message;
    while ((message = attache_curl_api.multi_info_read(m, &queued)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *result = message->data.result;
            return message->easy_handle;
        }
    }
    return NULL;
}

// The share interface: TLS sessions and DNS answers shared by every handle of one loop.
static inline CURLSH *attache_curl_share_init(void) { return attache_curl_api.share_init(); }
static inline CURLSHcode attache_curl_share_data(CURLSH *s, curl_lock_data what) {
    return attache_curl_api.share_setopt(s, CURLSHOPT_SHARE, what);
}

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call:
// one typed wrapper per argument type the project passes.

static inline CURLcode attache_curl_setopt_long(CURL *h, CURLoption o, long v) {
    return attache_curl_api.easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) {
    return attache_curl_api.easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
    return attache_curl_api.easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return attache_curl_api.easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
    return attache_curl_api.easy_setopt(h, o, v);
}
static inline CURLcode attache_curl_setopt_read_function(CURL *h, curl_read_callback f) {
    return attache_curl_api.easy_setopt(h, CURLOPT_READFUNCTION, f);
}
// CURLOPT_SEEKFUNCTION takes a function pointer through the variadic setopt.
static inline CURLcode attache_curl_setopt_seek_function(CURL *h, curl_seek_callback f) {
    return attache_curl_api.easy_setopt(h, CURLOPT_SEEKFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_write_function(CURL *h, curl_write_callback f) {
    return attache_curl_api.easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_header_function(CURL *h, curl_write_callback f) {
    return attache_curl_api.easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
static inline CURLcode attache_curl_setopt_xferinfo_function(CURL *h, curl_xferinfo_callback f) {
    return attache_curl_api.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}

static inline CURLcode attache_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return attache_curl_api.easy_getinfo(h, i, v);
}
static inline CURLcode attache_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) {
    return attache_curl_api.easy_getinfo(h, i, v);
}
static inline CURLcode attache_curl_getinfo_string(CURL *h, CURLINFO i, char **v) {
    return attache_curl_api.easy_getinfo(h, i, v);
}

// Macros Swift does not import as constants.
static inline size_t attache_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
static inline size_t attache_curl_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
static inline int attache_curl_pause_cont(void) { return CURLPAUSE_CONT; }

#endif
