/* Paths opened part by part (vc_beneath.h). */
#include "vc_beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int vc_openat2(int dirfd, const char *rel, int flags, uint64_t resolve)
{
    struct open_how how = {.flags = (uint64_t)flags | O_CLOEXEC, .resolve = resolve};
    return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

/* One part below dirfd, as a directory, no link followed. */
static int open_part(int dirfd, const char *part)
{
    return vc_openat2(dirfd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

int vc_mkdirs_at(int dirfd, const char *rel, mode_t mode, uid_t uid, gid_t gid, int *made, char *why, size_t wlen)
{
    *made = 0;
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        snprintf(why, wlen, "%s", strerror(errno));
        return -1;
    }
    char part[256];
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n >= sizeof(part) || (n == 2 && p[0] == '.' && p[1] == '.')) {
            snprintf(why, wlen, "\"%s\": a part is \"..\" or too long", rel);
            close(fd);
            return -1;
        }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            memcpy(part, p, n);
            part[n] = '\0';
            int next = open_part(fd, part);
            *made = 0;
            if (next < 0 && errno == ENOENT && mkdirat(fd, part, mode) == 0) {
                *made = 1;
                next = open_part(fd, part);
            }
            if (next < 0) {
                int e = errno;
                struct stat st;
                if (e == ENOTDIR && fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                    e = ELOOP; /* O_NOFOLLOW | O_DIRECTORY on a link says ENOTDIR */
                snprintf(why, wlen, "\"%.*s\": %s", (int)(p - rel + n), rel,
                         e == ELOOP || e == EXDEV ? "a symbolic link (never followed here)"
                         : e == ENOTDIR           ? "not a directory"
                                                  : strerror(e));
                close(fd);
                errno = e;
                return -1;
            }
            close(fd);
            fd = next;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    if (*made && uid != (uid_t)-1 && fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0) {
        snprintf(why, wlen, "\"%s\": cannot give it away: %s", rel, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int vc_mkdirs_beneath(const char *base, const char *rel, mode_t mode, uid_t uid, gid_t gid, int *made, char *why,
                      size_t wlen)
{
    *made = 0;
    int fd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, wlen, "cannot open \"%s\": %s", base, strerror(errno));
        return -1;
    }
    char inner[512];
    int out = vc_mkdirs_at(fd, rel, mode, uid, gid, made, inner, sizeof(inner));
    if (out < 0)
        snprintf(why, wlen, "below \"%s\": %s", base, inner);
    close(fd);
    return out;
}

int vc_stays_beneath(int dirfd, const char *rel)
{
    int fd = vc_openat2(dirfd, rel, O_PATH, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
    if (errno == EXDEV || errno == ELOOP)
        return 0;
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES)
        return 1;
    return -1;
}
