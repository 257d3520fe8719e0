/*
 * X-Accel-Redirect and X-Sendfile (handoff.h): for each site, a file
 * handler per directory a handoff may serve from (the root, each internal
 * location, each sendfile path), each on a path of the site's own h2o
 * host, which no client reaches; and, as a backend, the 404 that clients
 * asking for an internal location get.
 */
#include "sites.h"
#include "handoff.h"
#include "handoff_name.h"
#include "beneath.h"
#include "handler.h"
#include "route.h"
#include "seam.h"
#include "vc_log.h"
#include "vc_util.h"

#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct handoff_dir {
    char *prefix; /* internal locations: "/PREFIX/", with its last '/' */
    size_t prefix_len;
    char *dir; /* no trailing '/' */
    size_t dir_len;
    h2o_pathconf_t *conf; /* its handler's, with the filters */
    h2o_handler_t *files;
} handoff_dir_t;

typedef struct handoff_site {
    handoff_dir_t root; /* X-Accel-Redirect's URIs outside internal locations */
    handoff_dir_t *internal;
    size_t ninternal;
    handoff_dir_t *sendfile;
    size_t nsendfile;
} handoff_site_t;

static uint64_t served, refused;
static const seam_backend_t handoff_backend;

/* The headers nginx keeps from an answer it follows (ngx_http_upstream.c,
 * the "redirect" column of its table). */
static const char *const accel_kept[] = {
    "content-type", "content-disposition", "set-cookie", "cache-control", "expires", "accept-ranges",
};

handoff_kind_t handoff_header(const site_rt_t *s, const char *name, int status)
{
    if (!strcasecmp(name, "x-accel-redirect"))
        return HANDOFF_ACCEL;
    if (!strcasecmp(name, "x-sendfile") && s->conf->nsendfile_paths > 0 && status == 200)
        return HANDOFF_SENDFILE;
    return HANDOFF_NONE;
}

int handoff_keeps(handoff_kind_t k, const char *name)
{
    if (k == HANDOFF_SENDFILE)
        return strcasecmp(name, "x-sendfile") && strcasecmp(name, "content-length") &&
               strcasecmp(name, "content-encoding");
    for (size_t i = 0; i < VC_ARRAY_SIZE(accel_kept); i++)
        if (!strcasecmp(name, accel_kept[i]))
            return 1;
    return 0;
}

/* PHP's header, added before the file handler's, stands for it: one of
 * each. */
static void keep_first(h2o_req_t *req, const h2o_token_t *t)
{
    ssize_t first = h2o_find_header(&req->res.headers, t, -1);
    if (first == -1)
        return;
    for (ssize_t i; (i = h2o_find_header(&req->res.headers, t, first)) != -1;)
        h2o_delete_header(&req->res.headers, i);
}

static void on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    /* Several ranges: the answer is multipart/byteranges, whatever the
     * file's type (which each part says). */
    ssize_t t = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1), later;
    if (t != -1 && (later = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, t)) != -1 &&
        h2o_memis(req->res.headers.entries[later].value.base,
                  req->res.headers.entries[later].value.len < 20 ? req->res.headers.entries[later].value.len : 20,
                  H2O_STRLIT("multipart/byteranges")))
        h2o_delete_header(&req->res.headers, t);
    keep_first(req, H2O_TOKEN_CONTENT_TYPE);
    keep_first(req, H2O_TOKEN_LAST_MODIFIED);
    keep_first(req, H2O_TOKEN_ETAG);
    keep_first(req, H2O_TOKEN_ACCEPT_RANGES);
    h2o_setup_next_ostream(req, slot);
}

static void dir_init(front_t *f, site_rt_t *s, handoff_dir_t *d, const char *dir)
{
    static const char *no_index[] = {NULL};
    d->dir = vc_strdup(dir);
    d->dir_len = strlen(dir);
    d->conf = front_site_path(s, "/");
    d->files = (h2o_handler_t *)h2o_file_register(d->conf, dir, no_index, NULL, 0);
    h2o_filter_t *fix = h2o_create_filter(d->conf, sizeof(*fix));
    fix->on_setup_ostream = on_setup_ostream;
    front_path_filters(f, s, d->conf);
}

static int site_init(front_t *f, site_rt_t *s, void **state)
{
    const vc_site_t *c = s->conf;
    handoff_site_t *hs = vc_calloc(1, sizeof(*hs));
    dir_init(f, s, &hs->root, c->root);
    hs->internal = vc_calloc(c->ninternal_locations + 1, sizeof(*hs->internal));
    for (size_t i = 0; i < c->ninternal_locations; i++) {
        /* "/PREFIX[/] DIR", checked by vc_config_sites.c */
        const char *loc = c->internal_locations[i], *sp = strchr(loc, ' ');
        handoff_dir_t *d = &hs->internal[hs->ninternal++];
        size_t plen = (size_t)(sp - loc);
        d->prefix = vc_asprintf("%.*s%s", (int)plen, loc, loc[plen - 1] == '/' ? "" : "/");
        d->prefix_len = strlen(d->prefix);
        dir_init(f, s, d, sp + 1);
    }
    hs->sendfile = vc_calloc(c->nsendfile_paths + 1, sizeof(*hs->sendfile));
    for (size_t i = 0; i < c->nsendfile_paths; i++)
        dir_init(f, s, &hs->sendfile[hs->nsendfile++], c->sendfile_paths[i]);
    *state = hs;
    return 0;
}

static const handoff_dir_t *internal_of(const handoff_site_t *hs, const char *path, size_t len)
{
    for (size_t i = 0; i < hs->ninternal; i++)
        if (len >= hs->internal[i].prefix_len && memcmp(path, hs->internal[i].prefix, hs->internal[i].prefix_len) == 0)
            return &hs->internal[i];
    return NULL;
}

/* A client's own request for an internal location: as nginx, 404. */
static int take(const seam_request_t *r, void *state)
{
    const handoff_site_t *hs = state;
    if (hs->ninternal == 0 || internal_of(hs, r->req->path_normalized.base, r->req->path_normalized.len) == NULL)
        return 0;
    front_send_error(r->f, r->site, r->req, 404, "Not Found\n");
    return 1;
}

/* Not followed: 404, keeping PHP's headers as nginx does (its cookie,
 * its Content-Disposition) but for its Content-Type, which the error
 * page's replaces. */
static void refuse(front_t *f, site_rt_t *s, h2o_req_t *req)
{
    refused++;
    for (ssize_t i; (i = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1)) != -1;)
        h2o_delete_header(&req->res.headers, i);
    front_send_error_keeping(f, s, req, 404, "Not Found\n", 1);
}

static int is_file(const char *dir, const char *rest)
{
    char path[PATH_MAX];
    struct stat st;
    return snprintf(path, sizeof(path), "%s%s", dir, rest) < (int)sizeof(path) && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* X-Accel-Redirect's URI: the directory and the rest ("/..."), or NULL. */
static const handoff_dir_t *accel_target(const handoff_site_t *hs, const site_rt_t *s, const char *path, size_t len,
                                         const char **rest)
{
    if (path[0] != '/')
        return NULL;
    const handoff_dir_t *d = internal_of(hs, path, len);
    if (d) {
        *rest = path + d->prefix_len - 1;
        return d;
    }
    static route_t rt_store; /* 16 KiB, one request at a time per process (as handler.c's) */
    route_t *rt = &rt_store;
    route_kind_t k = route_resolve(&s->route, path, len, rt);
    d = NULL;
    if (k == ROUTE_STATIC) {
        *rest = path; /* as a client's request for it, beneath the root */
        d = &hs->root;
    } else if (k == ROUTE_PHP) {
        vc_log(VC_LOG_WARN, "handoff", "X-Accel-Redirect to %s is a script, which the front does not run again: 404",
               path);
    }
    return d;
}

/* X-Sendfile's path: the sendfile path holding it and the rest, or NULL. */
static const handoff_dir_t *sendfile_target(const handoff_site_t *hs, const char *path, const char **rest)
{
    for (size_t i = 0; i < hs->nsendfile; i++) {
        const handoff_dir_t *d = &hs->sendfile[i];
        if (path[0] == '/') {
            if (strncmp(path, d->dir, d->dir_len) == 0 && path[d->dir_len] == '/') {
                *rest = path + d->dir_len;
                return d;
            }
        } else {
            /* Relative: in the first of them that has it. */
            char *with_slash = vc_asprintf("/%s", path);
            int there = is_file(d->dir, with_slash);
            free(with_slash);
            if (there) {
                *rest = path - 1; /* the caller's '/' before it */
                return d;
            }
        }
    }
    return NULL;
}

void handoff_serve(front_t *f, site_rt_t *s, h2o_req_t *req, handoff_kind_t k, const char *value, size_t len)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    handoff_site_t *hs = seam_state(s, &handoff_backend);
    /* As nginx and mod_xsendfile: what follows is a GET of the file (a
     * HEAD stays one). */
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        req->method = h2o_iovec_init(H2O_STRLIT("GET"));
    char buf[PATH_MAX + 1];
    buf[0] = '/'; /* room for sendfile_target's relative paths */
    ssize_t n = handoff_name(value, len, k == HANDOFF_ACCEL, buf + 1, sizeof(buf) - 1);
    const char *name = k == HANDOFF_ACCEL ? "X-Accel-Redirect" : "X-Sendfile";
    if (n < 0) {
        vc_log(VC_LOG_WARN, "handoff", "%s %.*s: not a name the front follows", name, (int)(len > 200 ? 200 : len),
               value);
        refuse(f, s, req);
        return;
    }
    const char *rest = NULL;
    const handoff_dir_t *d =
        k == HANDOFF_ACCEL ? accel_target(hs, s, buf + 1, (size_t)n, &rest) : sendfile_target(hs, buf + 1, &rest);
    if (d == NULL || !is_file(d->dir, rest)) {
        vc_log(VC_LOG_INFO, "handoff", "%s %s: no such file where the site allows one: 404", name, buf + 1);
        refuse(f, s, req);
        return;
    }
    served++;
    req->path_normalized = h2o_strdup(&req->pool, rest, SIZE_MAX);
    req->pathconf = d->conf;
    beneath_begin(d->dir, d->dir_len);
    int rc = d->files->on_req(d->files, req); /* opens what it serves now, not later */
    beneath_end();
    if (rc != 0)
        refuse(f, s, req);
}

static const seam_counter_t counters[] = {
    {"vc_front_handoffs_total", "handoffs", "Answers PHP handed to the front (X-Accel-Redirect, X-Sendfile).", 0, 0,
     &served, NULL, 0},
    {"vc_front_handoffs_refused_total", "handoffs_refused",
     "X-Accel-Redirect and X-Sendfile names not followed (no such file where the site allows one).", 0, 0, &refused,
     NULL, 0},
};

static const seam_backend_t handoff_backend = {
    .name = "handoff",
    .stage = SEAM_ROUTED,
    .order = 40, /* before the cache and the PHP pool: an internal location is no one's */
    .site_init = site_init,
    .take = take,
    .counters = counters,
    .ncounters = VC_ARRAY_SIZE(counters),
};
SEAM_BACKEND(handoff_backend)
