/*
 * The manifest `vc deploy` signs (libcommon/vc_release.h): every directory,
 * file and link under the application's directory, but what is excluded
 * (.git, and each --exclude pattern).
 */
#include "deploy.h"
#include "vc_util.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* nftw() takes no argument of ours. */
static struct walk {
    deploy_t *d;
    size_t root_len;
    char why[9000];
} walk;

static int excluded(const deploy_t *d, const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    if (strcmp(base, ".git") == 0)
        return 1;
    for (size_t i = 0; i < d->nexclude; i++)
        if (fnmatch(d->exclude[i], rel, FNM_PATHNAME) == 0 || fnmatch(d->exclude[i], base, 0) == 0)
            return 1;
    return 0;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    deploy_t *d = walk.d;
    if (ftw->level == 0)
        return 0;
    const char *rel = path + walk.root_len + 1;
    if (excluded(d, rel))
        return type == FTW_D ? FTW_SKIP_SUBTREE : 0;
    if (!vc_release_path_ok(rel)) {
        snprintf(walk.why, sizeof(walk.why), "\"%s\": a name a release cannot hold", path);
        return FTW_STOP;
    }
    if (type == FTW_D) {
        vc_release_add(&d->rel, VC_REL_DIR, rel)->mode = st->st_mode & 0777;
    } else if (type == FTW_SL) {
        char target[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0) {
            snprintf(walk.why, sizeof(walk.why), "cannot read the link \"%s\": %s", path, strerror(errno));
            return FTW_STOP;
        }
        target[n] = '\0';
        if (!vc_release_target_ok(rel, target)) {
            snprintf(walk.why, sizeof(walk.why),
                     "the link \"%s\" -> \"%s\" leaves the application (absolute, or above it): a release holds only "
                     "links inside itself (site.shared links what lives beside the releases)",
                     path, target);
            return FTW_STOP;
        }
        vc_release_add(&d->rel, VC_REL_LINK, rel)->target = vc_strdup(target);
    } else if (type == FTW_F && S_ISREG(st->st_mode)) {
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        vc_rel_entry_t *e = vc_release_add(&d->rel, VC_REL_FILE, rel);
        e->mode = st->st_mode & 0777;
        if (fd < 0 || vc_release_hash_fd(fd, e->hash, &e->size) < 0) {
            snprintf(walk.why, sizeof(walk.why), "cannot read \"%s\": %s", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return FTW_STOP;
        }
        close(fd);
        d->bytes += e->size;
    } else if (type == FTW_DNR || type == FTW_NS) {
        snprintf(walk.why, sizeof(walk.why), "cannot read \"%s\"", path);
        return FTW_STOP;
    } else {
        fprintf(stderr, "vc deploy: \"%s\" is not a file, a directory or a link: left out\n", path);
    }
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const vc_rel_entry_t *)a)->path, ((const vc_rel_entry_t *)b)->path);
}

int deploy_build(deploy_t *d, char *why, size_t wlen)
{
    char *root = realpath(d->dir, NULL);
    struct stat st;
    if (root == NULL || stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, wlen, "\"%s\" is not a directory", d->dir);
        free(root);
        return -1;
    }
    walk.d = d;
    walk.root_len = strlen(root);
    walk.why[0] = '\0';
    int rc = nftw(root, visit, 32, FTW_PHYS | FTW_ACTIONRETVAL);
    d->root = root;
    if (rc != 0 || walk.why[0]) {
        snprintf(why, wlen, "%s", walk.why[0] ? walk.why : strerror(errno));
        return -1;
    }
    /* Sorted by path, a directory before what it holds (a prefix sorts
     * first). */
    if (d->rel.n > 1)
        qsort(d->rel.entries, d->rel.n, sizeof(*d->rel.entries), by_path);
    d->text = vc_release_format(&d->rel, &d->len);
    /* What the node will read must read back here first. */
    vc_release_t check;
    if (vc_release_parse(d->text, d->len, &check, why, wlen) < 0)
        return -1;
    vc_release_free(&check);
    return 0;
}
