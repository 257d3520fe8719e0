/*
 * The .htaccess files of a site's tree, asked before a request is served
 * (a backend of the core's own, ahead of the cache and PHP): what their
 * access rules close (htaccess.h) answers 403, as Apache would. Each
 * directory's file comes from htaccess_cache.h.
 *
 * Two chains are asked, from the root down: the directories of the path
 * asked for (so a missing file in a closed directory is 403 too), and
 * those of the file the route resolved to (a script or a static file
 * reached another way). A <Files> rule of any directory on the way
 * decides for the file's name over its directories' own rules.
 */
#include "handler.h"
#include "htaccess.h"
#include "htaccess_cache.h"
#include "htaccess_rewrite.h"
#include "seam.h"
#include "vc_util.h"

#include <string.h>

static uint64_t denied;

/* The verdict of the chain root/path's directories for the name after its
 * last '/': 1 if closed, or with script set, if scripts may not run there. */
static int closed(const char *root, size_t root_len, const char *path, size_t len, int script, uint64_t now)
{
    char dir[PATH_MAX];
    if (root_len + len + 1 > sizeof(dir) || len == 0 || path[0] != '/')
        return 0;
    memcpy(dir, root, root_len);
    memcpy(dir + root_len, path, len);
    dir[root_len + len] = '\0';
    const char *name = strrchr(dir + root_len, '/') + 1;
    size_t end = (size_t)(name - dir) - 1; /* the last '/' */
    htaccess_verdict_t d = HTACCESS_UNSET, f = HTACCESS_UNSET;
    for (size_t at = root_len;;) {
        int is_dir;
        const htaccess_t *h = htaccess_cached(dir, at, now, &is_dir);
        if (!is_dir)
            break; /* nothing below a missing directory has a .htaccess */
        if (h) {
            htaccess_verdict_t v = htaccess_dir_verdict(h), fv = htaccess_file_verdict(h, name);
            d = v != HTACCESS_UNSET ? v : d;
            f = fv != HTACCESS_UNSET ? fv : f;
            if (htaccess_unreadable(h) || (script && htaccess_no_scripts(h)) || htaccess_runs_php(h, name))
                return 1;
        }
        if (at >= end)
            break;
        const char *next = memchr(dir + at + 1, '/', end - at);
        at = next ? (size_t)(next - dir) : end;
    }
    return (f != HTACCESS_UNSET ? f : d) == HTACCESS_DENIED;
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    *state = s->conf->htaccess ? s : NULL;
    return 0;
}

static int take(const seam_request_t *r, void *state)
{
    if (state == NULL)
        return 0;
    const route_site_t *rs = &r->site->route;
    const h2o_iovec_t p = r->req->path_normalized;
    uint64_t now = vc_mono_ms() / 1000; /* once a request */
    int script = r->kind == ROUTE_PHP;
    int shut = closed(rs->root, rs->root_len, p.base, p.len, 0, now);
    /* The resolved file's chain, unless it is the path's own (most
     * requests: then only its scripts' rule is left to ask). */
    const char *file = r->route->file + rs->root_len;
    int resolved = (r->kind == ROUTE_PHP || r->kind == ROUTE_STATIC) &&
                   strncmp(r->route->file, rs->root, rs->root_len) == 0 && *file == '/';
    int same = resolved && strlen(file) == p.len && memcmp(file, p.base, p.len) == 0;
    if (!shut && resolved && (!same || script))
        shut = closed(rs->root, rs->root_len, file, strlen(file), script, now);
    if (!shut)
        return 0;
    denied++;
    front_send_error(r->f, r->site, r->req, 403, "Forbidden\n");
    return 1;
}

static const seam_counter_t counters[] = {
    {"vc_front_htaccess_denied_total", "htaccess_denied", "Requests a site's .htaccess access rules answered 403.", 0,
     0, &denied, NULL, 0},
    {"vc_front_htaccess_rewritten_total", "htaccess_rewritten",
     "Requests a site's .htaccess rewrite rules sent to another path.", 0, 0, NULL, htaccess_rewrite_count_internal, 0},
    {"vc_front_htaccess_redirected_total", "htaccess_redirected",
     "Requests a site's .htaccess rules answered themselves: a redirect, a status.", 0, 0, NULL,
     htaccess_rewrite_count_answered, 0},
};

static const seam_backend_t htaccess_access = {
    .name = "htaccess",
    .stage = SEAM_ROUTED,
    .order = 30, /* before what serves: the cache, X-Accel-Redirect's internal locations, files, PHP */
    .site_init = site_init,
    .take = take,
    .counters = counters,
    .ncounters = VC_ARRAY_SIZE(counters),
};
SEAM_BACKEND(htaccess_access)
