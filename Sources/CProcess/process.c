#define _GNU_SOURCE
#include "attache_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void set_limit(int resource, unsigned long long value) {
    if (value == 0) return;
    // Soft and hard alike. For CPU time that means SIGKILL at the limit and no SIGXCPU before it: ffmpeg
    // catches SIGXCPU and exits with status 255 when it can wrap up in time, which looked like a file it
    // could not read, and the CPU time the kernel had counted by ticks when it sent the signal can be
    // more than what wait4 reports, so the time alone could not say either.
    struct rlimit limit = {(rlim_t)value, (rlim_t)value};
    setrlimit(resource, &limit);
}

// Runs in the child between fork and exec: only async-signal-safe calls.
static void become_child(const char *path, char *const argv[], char *const envp[],
                         const struct attache_process_limits *limits, int stdin_fd, int stdout_fd,
                         int stderr_fd, int report_fd) {
    setpgid(0, 0);
    // The parent's blocked signals and ignored dispositions must not leak into the child.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    // Every disposition back to the default: an ignored signal stays ignored across exec, and the parent
    // ignores some while it watches them (SIGINT and SIGTERM, through signalfd), which a child must not
    // inherit. Caught ones are reset by exec anyway.
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    for (int number = 1; number < NSIG; number++) {
        if (number != SIGKILL && number != SIGSTOP) sigaction(number, &default_action, NULL);
    }

    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    set_limit(RLIMIT_CPU, limits->cpu_seconds);
    set_limit(RLIMIT_AS, limits->address_space_bytes);
    set_limit(RLIMIT_FSIZE, limits->file_size_bytes);

    // Move the report pipe out of the way of 0-2 before the dup2s can overwrite it.
    if (report_fd <= 2) {
        int moved = fcntl(report_fd, F_DUPFD_CLOEXEC, 3);
        if (moved < 0) goto fail;
        report_fd = moved;
    }
    int fds[3] = {stdin_fd, stdout_fd, stderr_fd};
    for (int target = 0; target < 3; target++) {
        if (fds[target] == target) {
            int flags = fcntl(target, F_GETFD);
            if (flags >= 0) fcntl(target, F_SETFD, flags & ~FD_CLOEXEC);
        } else if (dup2(fds[target], target) < 0) {
            goto fail;
        }
    }
    // Every other descriptor closed, except the report pipe, which is close-on-exec.
    for (int fd = 3; fd < 1024; fd++) {
        if (fd != report_fd) close(fd);
    }
#ifdef SYS_close_range
    if (report_fd > 1024) syscall(SYS_close_range, 1024u, (unsigned)report_fd - 1, 0);
    syscall(SYS_close_range, (unsigned)(report_fd > 1024 ? report_fd + 1 : 1024), ~0u, 0);
#endif
    execve(path, argv, envp);
fail:;
    int code = errno;
    ssize_t ignored = write(report_fd, &code, sizeof code);
    (void)ignored;
    _exit(127);
}

int attache_spawn_limited(const char *path, char *const argv[], char *const envp[],
                          const struct attache_process_limits *limits, int stdin_fd, int stdout_fd,
                          int stderr_fd, pid_t *pid) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    pid_t child = fork();
    if (child < 0) {
        int code = errno;
        close(report[0]);
        close(report[1]);
        return code;
    }
    if (child == 0) {
        close(report[0]);
        become_child(path, argv, envp, limits, stdin_fd, stdout_fd, stderr_fd, report[1]);
    }
    close(report[1]);
    int code = 0;
    ssize_t got;
    do {
        got = read(report[0], &code, sizeof code);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof code) {
        // The exec failed: the child has exited (127); reap it so no zombie is left.
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        return code != 0 ? code : ENOEXEC;
    }
    *pid = child;
    return 0;
}

int attache_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}
