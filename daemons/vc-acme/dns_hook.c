#include "dns_hook.h"
#include "vc_log.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOOK_TIMEOUT_MS 60000
#define HOOK_OUTPUT_MAX 4096 /* logged; more is read and dropped */

extern char **environ;

/* Logs each whole line of buf[0..*len) and keeps the rest; the last one
 * logged stays in last. */
static void log_lines(const char *hook, char *buf, size_t *len, int flush, char *last, size_t lastlen)
{
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *len - start))) != NULL || (flush && start < buf + *len)) {
        char *end = nl ? nl : buf + *len;
        *end = '\0';
        if (end > start) {
            vc_log(VC_LOG_INFO, "dns-hook", "%s: %s", hook, start);
            snprintf(last, lastlen, "%s", start);
        }
        start = nl ? nl + 1 : buf + *len;
    }
    *len = (size_t)(buf + *len - start);
    memmove(buf, start, *len);
}

/* Reads the hook's output until it closes it or time is up. */
static int drain(int fd, const char *hook, char *last, size_t lastlen)
{
    char buf[HOOK_OUTPUT_MAX + 1];
    size_t len = 0;
    uint64_t until = vc_mono_ms() + HOOK_TIMEOUT_MS;
    for (;;) {
        uint64_t now = vc_mono_ms();
        if (now >= until)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, (int)(until - now));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1; /* time is up */
        ssize_t r = read(fd, buf + len, HOOK_OUTPUT_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        log_lines(hook, buf, &len, len == HOOK_OUTPUT_MAX, last, lastlen);
    }
    log_lines(hook, buf, &len, 1, last, lastlen);
    return 0;
}

int dns_hook_run(const char *hook, const char *op, const char *name, const char *value, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "dns hook: pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none); /* the daemon's blocked signals are not the hook's */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    char *argv[] = {(char *)hook, (char *)op, (char *)name, (char *)value, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, hook, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(err, errlen, "dns hook \"%s\" could not be run: %s", hook, strerror(rc));
        return -1;
    }
    char last[512] = "";
    int timed_out = drain(fds[0], hook, last, sizeof(last)) < 0;
    close(fds[0]);
    if (timed_out)
        kill(-pid, SIGKILL); /* its process group: what it started too */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (timed_out)
        snprintf(err, errlen, "dns hook \"%s %s %s\" took over %d s", hook, op, name, HOOK_TIMEOUT_MS / 1000);
    else if (WIFEXITED(status))
        snprintf(err, errlen, "dns hook \"%s %s %s\" exited with %d%s%s", hook, op, name, WEXITSTATUS(status),
                 last[0] ? ": " : "", last);
    else
        snprintf(err, errlen, "dns hook \"%s %s %s\" was killed by signal %d", hook, op, name, WTERMSIG(status));
    return -1;
}
