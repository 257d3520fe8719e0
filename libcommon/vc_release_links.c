/*
 * A release's links, resolved as the kernel would resolve them (vc_release.h).
 *
 * Checking each link's target as text is not enough: "r -> ../../.." is
 * fine at depth 3, yet "x -> r/../../../.." counts as inside while the
 * kernel takes r first and lands three levels above the release. So each
 * link is walked here part by part against the manifest itself: a part
 * that is a link in the manifest is replaced by its own target, resolved
 * from that link's directory, as path resolution does; ".." is taken only
 * from a directory the manifest holds (from a missing one the kernel would
 * take it from whatever comes to stand there: a shared path's link, say),
 * and never from the release's top.
 */
#include "vc_release.h"
#include "vc_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Links followed for one link, as the kernel's MAXSYMLINKS. */
#define FOLLOW_MAX 40
#define PATH_CAP 8192

typedef struct walk {
    const vc_release_t *r;
    char path[PATH_CAP]; /* where the walk stands, relative ("" is the top) */
    size_t len;
    int follows;
    const char *why;
} walk_t;

static const vc_rel_entry_t *find(const vc_release_t *r, const char *path)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->entries[mid].path, path);
        if (c == 0)
            return &r->entries[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void up(walk_t *w)
{
    char *slash = strrchr(w->path, '/');
    w->len = slash ? (size_t)(slash - w->path) : 0;
    w->path[w->len] = '\0';
}

/* Walks target from where w stands. 0, or -1 with w->why. */
static int follow(walk_t *w, const char *target)
{
    if (target[0] == '/') {
        w->why = "absolute";
        return -1;
    }
    for (const char *part = target; *part;) {
        size_t n = strcspn(part, "/");
        if (n == 2 && part[0] == '.' && part[1] == '.') {
            const vc_rel_entry_t *here = w->len ? find(w->r, w->path) : NULL;
            if (w->len == 0) {
                w->why = "above the release";
                return -1;
            }
            if (here == NULL || here->kind != VC_REL_DIR) {
                w->why = "\"..\" from a path the release does not hold as a directory";
                return -1;
            }
            up(w);
        } else if (n > 0 && !(n == 1 && part[0] == '.')) {
            if (w->len + 1 + n + 1 > sizeof(w->path)) {
                w->why = "too long";
                return -1;
            }
            if (w->len)
                w->path[w->len++] = '/';
            memcpy(w->path + w->len, part, n);
            w->len += n;
            w->path[w->len] = '\0';
            const vc_rel_entry_t *e = find(w->r, w->path);
            if (e && e->kind == VC_REL_LINK) {
                if (++w->follows > FOLLOW_MAX) {
                    w->why = "links in a loop, or too many in a row";
                    return -1;
                }
                up(w);
                if (follow(w, e->target) < 0)
                    return -1;
            }
        }
        part += n;
        while (*part == '/')
            part++;
    }
    return 0;
}

int vc_release_links_ok(const vc_release_t *r, char *why, size_t wlen)
{
    walk_t *w = vc_calloc(1, sizeof(*w));
    w->r = r;
    int rc = 0;
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        const vc_rel_entry_t *e = &r->entries[i];
        if (e->kind != VC_REL_LINK)
            continue;
        snprintf(w->path, sizeof(w->path), "%s", e->path);
        w->len = strlen(w->path);
        w->follows = 0;
        up(w);
        if (follow(w, e->target) < 0) {
            snprintf(why, wlen, "the link \"%s\" -> \"%s\" leaves the release as it resolves (%s)", e->path, e->target,
                     w->why);
            rc = -1;
        }
    }
    free(w);
    return rc;
}
