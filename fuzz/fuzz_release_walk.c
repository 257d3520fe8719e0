/* libFuzzer: a release's links, judged by the kernel. The input is the
 * entries of a manifest (after a fixed header: "d 755 a", "l a/r ../.."),
 * read as vc-fed reads one (libcommon/vc_release.c). What it accepts is
 * then made for real in a temporary directory, links and all, and every
 * entry is opened with openat2(RESOLVE_BENEATH) from the release's top,
 * following its links: the kernel must never say the path left it (EXDEV). The manifest's own resolution
 * and the kernel's are separate code, so the one checks the other. */
#include "vc_release.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char header[] = "velocity-release 1\nsite s\nid a\ncreated 1\nsigner k\nmessage \n";

static char top[64];

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_all(void)
{
    if (nftw(top, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        abort();
}

/* Whether the kernel takes path out of the directory dirfd stands for. */
static int leaves(int dirfd, const char *path)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == EXDEV;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(sizeof(header) + size);
    memcpy(text, header, sizeof(header) - 1);
    memcpy(text + sizeof(header) - 1, data, size);
    vc_release_t r;
    char why[512];
    int rc = vc_release_parse(text, sizeof(header) - 1 + size, &r, why, sizeof(why));
    free(text);
    if (rc < 0)
        return 0;
    snprintf(top, sizeof(top), "/tmp/vc-fuzz-walk-%d", (int)getpid());
    mkdir(top, 0700);
    int dirfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        abort();
    /* Parents come first in a manifest, so each is made before what it holds. */
    for (size_t i = 0; i < r.n; i++) {
        const vc_rel_entry_t *e = &r.entries[i];
        if (e->kind == VC_REL_DIR)
            mkdirat(dirfd, e->path, 0700);
        else if (e->kind == VC_REL_LINK)
            symlinkat(e->target, dirfd, e->path);
        else
            close(openat(dirfd, e->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    }
    for (size_t i = 0; i < r.n; i++) {
        const vc_rel_entry_t *e = &r.entries[i];
        if (leaves(dirfd, e->path)) {
            fprintf(stderr, "accepted, yet \"%s\" leaves the release\n", e->path);
            abort();
        }
    }
    close(dirfd);
    remove_all();
    vc_release_free(&r);
    return 0;
}
