/*
 * The static-file backend: what the route resolved to a file is served by
 * h2o's file handler for the site (ETag, Last-Modified, ranges, sendfile,
 * index.html, precompressed .gz), opened beneath the site's root
 * (beneath.h), with Range headers tamed first (ranges.h).
 */
#include "core/beneath.h"
#include "core/handler.h"
#include "core/htaccess_respond.h"
#include "core/seam.h"
#include "core/sites.h"
#include "ranges.h"
#include "vc_util.h"

#include <string.h>
#include <sys/stat.h>

typedef struct static_site {
    h2o_pathconf_t *conf; /* the file handler, expires, compress, log */
    h2o_handler_t *files;
} static_site_t;

static void drop_ranges(h2o_req_t *req)
{
    for (ssize_t i; (i = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1)) != -1;)
        h2o_delete_header(&req->headers, i);
}

/* Before h2o's file handler reads a Range header (ranges.h): merged, or
 * dropped for the whole file. Two Range headers: neither is believed. */
static void tame_ranges(front_t *f, h2o_req_t *req, const char *file)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1);
    if (i == -1)
        return;
    struct stat st;
    if (h2o_find_header(&req->headers, H2O_TOKEN_RANGE, i) != -1 || stat(file, &st) != 0) {
        drop_ranges(req);
        f->stats.ranges_tamed++;
        return;
    }
    char out[RANGES_MAX * 48 + 8];
    h2o_iovec_t *v = &req->headers.entries[i].value;
    switch (ranges_tame(v->base, v->len, (uint64_t)st.st_size, out, sizeof(out))) {
    case RANGES_KEEP: return;
    case RANGES_REWRITE: *v = h2o_strdup(&req->pool, out, SIZE_MAX); break;
    case RANGES_IGNORE: drop_ranges(req); break;
    }
    f->stats.ranges_tamed++;
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    static const char *index_files[] = {"index.html", NULL};
    static_site_t *st = vc_calloc(1, sizeof(*st));
    st->conf = front_site_path(s, "/");
    st->files =
        (h2o_handler_t *)h2o_file_register(st->conf, s->conf->root, index_files, NULL, H2O_FILE_FLAG_SEND_COMPRESSED);
    if (s->conf->static_max_age >= 0) {
        h2o_expires_args_t args = {.mode = H2O_EXPIRES_MODE_MAX_AGE};
        args.data.max_age = (uint64_t)s->conf->static_max_age;
        h2o_expires_register(st->conf, &args);
    }
    front_path_filters(f, s, st->conf);
    *state = st;
    return 0;
}

static int take(const seam_request_t *r, void *state)
{
    if (r->kind != ROUTE_STATIC)
        return 0;
    static_site_t *st = state;
    r->f->stats.statics++;
    r->req->pathconf = st->conf;
    tame_ranges(r->f, r->req, r->route->file);
    htaccess_respond_attach(r);
    /* h2o's handler serves the path under the root: the one routed, when
     * it is not the client's (a directory's index, a rewritten path). */
    const char *uri = r->route->document_uri;
    if (!h2o_memis(r->req->path_normalized.base, r->req->path_normalized.len, uri, strlen(uri)))
        r->req->path_normalized = h2o_strdup(&r->req->pool, uri, SIZE_MAX);
    const route_site_t *root = &r->site->route;
    beneath_begin(root->root, root->root_len);
    int rc = st->files->on_req(st->files, r->req); /* opens what it serves now, not later */
    beneath_end();
    if (rc != 0) /* h2o's handler declined: nothing was sent */
        front_send_error(r->f, r->site, r->req, 404, "Not Found\n");
    return 1;
}

static const seam_backend_t static_files = {
    .name = "static",
    .stage = SEAM_ROUTED,
    .order = 50,
    .site_init = site_init,
    .take = take,
};
SEAM_BACKEND(static_files)
