#include "front.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

static const char *const own_commands[] = {"detect", "recompress", "encrypt", "decrypt"};
static const char *const transfer_commands[] = {"upload", "request"};

static int listed(const char *word, const char *const *list, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (strcmp(word, list[i]) == 0) return 1;
    }
    return 0;
}

const char *attache_front_target(const char *command) {
    if (command != NULL && listed(command, own_commands, sizeof own_commands / sizeof *own_commands)) return NULL;
    if (command != NULL && listed(command, transfer_commands, sizeof transfer_commands / sizeof *transfer_commands)) {
        return "attache-transfer";
    }
    return "attache-pipeline";
}

// Hands a command line the front does not run itself to its sibling executable before the Swift
// runtime and `main` start: for `attache request` and `attache upload` that is most of the front's
// cost (docs/BENCHMARKS.md, requests). glibc calls constructors of a static executable with main's
// arguments. When the sibling cannot be started this returns, and `main` tries again (the sibling,
// then PATH) and reports why it failed.
__attribute__((constructor)) static void attache_front_dispatch(int argc, char **argv, char **envp) {
    const char *target = attache_front_target(argc > 1 ? argv[1] : NULL);
    if (target == NULL) return;
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return;
    path[length] = '\0';
    char *slash = strrchr(path, '/');
    if (slash == NULL || (size_t)(slash + 1 - path) + strlen(target) >= sizeof path) return;
    strcpy(slash + 1, target);
    char *program = argv[0];
    argv[0] = path;  // as SiblingExecutable passes it: the sibling's own path
    execve(path, argv, envp);
    argv[0] = program;
}
