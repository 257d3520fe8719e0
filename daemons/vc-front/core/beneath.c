#include "beneath.h"
#include "vc_beneath.h"
#include "root_links.h"
#include "vc_log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

/* Roots opened this turn. A turn that serves more sites than this reopens
 * the least recent: a cost, never a wrong answer. */
#define ROOTS 8

typedef struct root_fd {
    char path[4096];
    size_t len;
    int fd; /* -1: free */
    unsigned used;
} root_fd_t;

static root_fd_t roots[ROOTS] = {[0 ... ROOTS - 1] = {.fd = -1}};
static unsigned uses;
/* Between beneath_begin() and beneath_end(), in the loop's thread only:
 * ZeroMQ's threads open what they open unguarded meanwhile. */
static _Thread_local const root_fd_t *guard;
static _Thread_local const char *guard_root;
static _Thread_local size_t guard_len;
static uint64_t escapes;

/* libc's own openat(), which we do not define: outside a guarded call,
 * an open() anyone in the program makes (libh2o, LMDB, OpenSSL, ours) is
 * libc's, with what tools that watch libc's calls see of it (ASan's
 * checks of the path, LD_PRELOAD interposers), not a bare system call. */
static long sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return openat(dirfd, path, flags, mode);
}

static const root_fd_t *root_fd_of(const char *root, size_t len)
{
    root_fd_t *victim = &roots[0];
    for (int i = 0; i < ROOTS; i++) {
        root_fd_t *r = &roots[i];
        if (r->fd >= 0 && r->len == len && memcmp(r->path, root, len) == 0) {
            r->used = ++uses;
            return r;
        }
        if (r->fd < 0 || (victim->fd >= 0 && r->used < victim->used))
            victim = r;
    }
    if (len >= sizeof(victim->path))
        return NULL;
    if (victim->fd >= 0)
        close(victim->fd);
    memcpy(victim->path, root, len);
    victim->path[len] = '\0';
    victim->len = len;
    victim->fd = (int)sys_openat(AT_FDCWD, victim->path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    victim->used = ++uses;
    return victim->fd >= 0 ? victim : NULL;
}

void beneath_begin(const char *root, size_t root_len)
{
    guard_root = root;
    guard_len = root_len;
    guard = root_fd_of(root, root_len); /* NULL: the root is gone, every open fails */
}

void beneath_end(void)
{
    guard = NULL;
    guard_root = NULL;
}

void beneath_new_turn(void)
{
    for (int i = 0; i < ROOTS; i++)
        if (roots[i].fd >= 0) {
            close(roots[i].fd);
            roots[i].fd = -1;
        }
}

uint64_t beneath_escapes_total(void)
{
    return escapes;
}

static int open_guarded(const char *path, int flags)
{
    if (guard == NULL || strncmp(path, guard_root, guard_len) != 0 || path[guard_len] != '/') {
        errno = ENOENT;
        return -1;
    }
    const char *rel = path + guard_len;
    while (*rel == '/')
        rel++;
    if (*rel == '\0')
        rel = ".";
    int fd = vc_openat2(guard->fd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0)
        return fd;
    if (errno == ENOSYS) {
        /* A kernel before 5.6, or a container's filter that hides the call. */
        static int said;
        if (!said++)
            vc_log(VC_LOG_WARN, "static",
                   "openat2() is not available: static files are opened by path, checked by the path cache only");
        return (int)sys_openat(AT_FDCWD, path, flags, 0);
    }
    /* Out of the root through links root made (a Debian package's tree):
     * followed, as route.c allowed them. */
    if (errno == EXDEV && root_links_only(guard_root, guard_len, path))
        return (int)sys_openat(AT_FDCWD, path, flags, 0);
    if (errno == EXDEV || errno == ELOOP) {
        if (escapes++ % 1000 == 0)
            vc_log(VC_LOG_NOTICE, "static", "refused to open \"%s\": it resolves outside the site's root (%s)", path,
                   errno == EXDEV ? "a symlink or \"..\" out of it" : "a link the kernel will not follow");
        errno = ENOENT; /* as route.c answers an escape: 404 */
    }
    return -1;
}

/* libh2o's open() (see beneath.h). Creating a file is never guarded: the
 * file handler only reads. */
int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (guard_root != NULL && !(flags & (O_CREAT | O_TMPFILE)))
        return open_guarded(path, flags);
    return (int)sys_openat(AT_FDCWD, path, flags, mode);
}

/* What open() is under _FORTIFY_SOURCE when its flags are not constant:
 * libh2o's filecache calls this one. */
int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags)
{
    return open(path, flags);
}
