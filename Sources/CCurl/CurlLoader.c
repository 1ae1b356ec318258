#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct attache_curl_functions attache_curl_api;

// The run-time name of libcurl 4 (the ABI every libcurl since 7.16 keeps), as the -dev package's
// libcurl.so link points to it; the -dev package itself need not be installed where attache runs.
static const char library_name[] = "libcurl.so.4";

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = -1;
static char load_error[512] = "libcurl was not loaded";

// Stores a symbol's address in a function-pointer field. memcpy because ISO C has no conversion
// from void * to a function pointer; POSIX guarantees the representations match.
static int resolve(void *library, const char *name, void *field) {
    void *address = dlsym(library, name);
    if (address == NULL) {
        snprintf(load_error, sizeof load_error, "%s has no function %s", library_name, name);
        return -1;
    }
    memcpy(field, &address, sizeof address);
    return 0;
}

static void load(void) {
    // RTLD_LAZY: a transfer binds only the functions it calls, so an upload does not pay for
    // relocating all of curl's dependencies up front. RTLD_LOCAL keeps curl's symbols out of the
    // global scope, where they could otherwise interpose on other libraries' lookups.
    void *library = dlopen(library_name, RTLD_LAZY | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "%s", reason != NULL ? reason : library_name);
        return;
    }
    struct attache_curl_functions api;
    if (resolve(library, "curl_global_init", &api.global_init) != 0
        || resolve(library, "curl_easy_init", &api.easy_init) != 0
        || resolve(library, "curl_easy_cleanup", &api.easy_cleanup) != 0
        || resolve(library, "curl_easy_reset", &api.easy_reset) != 0
        || resolve(library, "curl_easy_setopt", &api.easy_setopt) != 0
        || resolve(library, "curl_easy_getinfo", &api.easy_getinfo) != 0
        || resolve(library, "curl_easy_strerror", &api.easy_strerror) != 0
        || resolve(library, "curl_slist_append", &api.slist_append) != 0
        || resolve(library, "curl_slist_free_all", &api.slist_free_all) != 0
        || resolve(library, "curl_easy_pause", &api.easy_pause) != 0
        || resolve(library, "curl_multi_init", &api.multi_init) != 0
        || resolve(library, "curl_multi_add_handle", &api.multi_add_handle) != 0
        || resolve(library, "curl_multi_remove_handle", &api.multi_remove_handle) != 0
        || resolve(library, "curl_multi_perform", &api.multi_perform) != 0
        || resolve(library, "curl_multi_poll", &api.multi_poll) != 0
        || resolve(library, "curl_multi_wakeup", &api.multi_wakeup) != 0
        || resolve(library, "curl_multi_info_read", &api.multi_info_read) != 0
        || resolve(library, "curl_multi_setopt", &api.multi_setopt) != 0
        || resolve(library, "curl_multi_strerror", &api.multi_strerror) != 0
        || resolve(library, "curl_share_init", &api.share_init) != 0
        || resolve(library, "curl_share_setopt", &api.share_setopt) != 0) {
        dlclose(library);
        return;
    }
    // curl_global_init is not thread-safe; pthread_once makes this its only call.
    CURLcode code = api.global_init(CURL_GLOBAL_ALL);
    if (code != CURLE_OK) {
        snprintf(load_error, sizeof load_error, "curl_global_init failed: %s", api.easy_strerror(code));
        load_status = (int)code;
        return;  // the library stays loaded: unloading after a partial init is not safe
    }
    attache_curl_api = api;
    load_error[0] = '\0';
    load_status = 0;
}

int attache_curl_load(void) {
    // pthread_once also publishes attache_curl_api to every thread that returns from here.
    pthread_once(&load_once, load);
    return load_status;
}

const char *attache_curl_load_error(void) {
    attache_curl_load();
    return load_error;
}

const char *attache_curl_library_name(void) { return library_name; }
