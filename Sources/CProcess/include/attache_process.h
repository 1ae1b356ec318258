#ifndef ATTACHE_PROCESS_H
#define ATTACHE_PROCESS_H

#include <sys/types.h>

// Starting a child under resource limits. posix_spawn cannot set rlimits in the child and Swift cannot
// call fork safely, so the few async-signal-safe steps between fork and exec live here, in C.

/// Limits applied in the child before exec; 0 leaves a limit as inherited.
struct attache_process_limits {
    /// RLIMIT_CPU: the kernel sends SIGKILL when the child used this much CPU time (no SIGXCPU first).
    unsigned long long cpu_seconds;
    /// RLIMIT_AS: the child's allocations fail beyond this much address space.
    unsigned long long address_space_bytes;
    /// RLIMIT_FSIZE: a write beyond this file size fails (SIGXFSZ).
    unsigned long long file_size_bytes;
};

/// Forks and executes `path` with `argv` and `envp` in a new process group, with standard input from
/// `stdin_fd`, output to `stdout_fd` and `stderr_fd`, every other descriptor closed, no core dumps and
/// the limits in `limits`. Returns 0 and the child's pid in `*pid`, or an errno value (from fork, or
/// from the exec in the child, reported through a close-on-exec pipe) with no child left running.
int attache_spawn_limited(const char *path, char *const argv[], char *const envp[],
                          const struct attache_process_limits *limits, int stdin_fd, int stdout_fd,
                          int stderr_fd, pid_t *pid);

/// pipe2(fds, O_CLOEXEC), which Swift's Glibc module does not import (it is a GNU extension).
int attache_pipe_cloexec(int fds[2]);

#endif
