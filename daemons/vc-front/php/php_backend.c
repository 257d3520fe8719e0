/*
 * The PHP backend: a request the route resolved to a script becomes a
 * RequestHead (the CGI/1.1 variables php-fpm gets from nginx's
 * fastcgi_params, as fields) and goes to the site's pool over its link
 * (backend.c). Its life in the front: a link to each pool, made at start
 * (php_pool.c), ticked each second, and waited for at the stop.
 */
#include "backend_internal.h"
#include "core/conn.h"
#include "core/forwarded.h"
#include "core/handler.h"
#include "core/htaccess_respond.h"
#include "core/seam.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* "1.2.3.4" / "::1" and the port of a socket address, in the pool. */
static char *addr_str(h2o_mem_pool_t *pool, struct sockaddr *sa, uint32_t *port)
{
    char buf[INET6_ADDRSTRLEN];
    *port = vc_sockaddr_host(sa, buf, sizeof(buf));
    return h2o_strdup(pool, buf, SIZE_MAX).base;
}

static char *pool_str(h2o_mem_pool_t *pool, const char *s, size_t len)
{
    return h2o_strdup(pool, s, len).base;
}

static const char *protocol_of(h2o_req_t *req)
{
    if (req->version >= 0x200)
        return "HTTP/2.0";
    return req->version == 0x100 ? "HTTP/1.0" : "HTTP/1.1";
}

/* The site's parameters, what a .htaccess's rewrite rules set (rw may be
 * NULL), as Apache hands them to PHP, what the front set on a request of
 * its own (h2o's env: VC_SOCKETIO on a Socket.IO handler's; no client
 * request has any), and its php_value settings. */
static void params_of(const site_rt_t *s, h2o_req_t *req, const htaccess_rewritten_t *rw, Vc__RequestHead *head)
{
    size_t vars = rw ? rw->nvars : 0, env = req->env.size / 2;
    Vc__Header *params = h2o_mem_alloc_pool(&req->pool, sizeof(Vc__Header) * (SEAM_PHP_PARAMS + vars + env));
    Vc__Header **pp = h2o_mem_alloc_pool(&req->pool, sizeof(Vc__Header *) * (SEAM_PHP_PARAMS + vars + env));
    size_t n = seam_php_params(s, params, pp);
    for (size_t i = 0; i < vars; i++, n++) {
        vc__header__init(&params[n]);
        params[n].name = (char *)rw->names[i];
        params[n].value.data = (uint8_t *)rw->values[i];
        params[n].value.len = strlen(rw->values[i]);
        pp[n] = &params[n];
    }
    for (size_t i = 0; i < env; i++, n++) {
        vc__header__init(&params[n]);
        params[n].name = pool_str(&req->pool, req->env.entries[2 * i].base, req->env.entries[2 * i].len);
        params[n].value.data = (uint8_t *)req->env.entries[2 * i + 1].base;
        params[n].value.len = req->env.entries[2 * i + 1].len;
        pp[n] = &params[n];
    }
    head->params = pp;
    head->n_params = n;
    if (rw && rw->nini) {
        Vc__Header *ini = h2o_mem_alloc_pool(&req->pool, sizeof(Vc__Header) * rw->nini);
        Vc__Header **ip = h2o_mem_alloc_pool(&req->pool, sizeof(Vc__Header *) * rw->nini);
        for (size_t i = 0; i < rw->nini; i++) {
            vc__header__init(&ini[i]);
            /* copied: the .htaccess they come from may be compiled again
             * while the request waits for a worker */
            ini[i].name = pool_str(&req->pool, rw->ini_names[i], strlen(rw->ini_names[i]));
            ini[i].value.len = strlen(rw->ini_values[i]);
            ini[i].value.data = (uint8_t *)pool_str(&req->pool, rw->ini_values[i], ini[i].value.len);
            ip[i] = &ini[i];
        }
        head->ini = ip;
        head->n_ini = rw->nini;
    }
}

static void to_php(front_t *f, site_rt_t *s, php_pool_t *php, h2o_req_t *req, const route_t *rt,
                   const htaccess_rewritten_t *rw)
{
    h2o_mem_pool_t *pool = &req->pool;
    Vc__RequestHead head = VC__REQUEST_HEAD__INIT;
    head.method = pool_str(pool, req->method.base, req->method.len);
    head.scheme = req->scheme == &H2O_URL_SCHEME_HTTPS ? "https" : "http";
    head.https = req->scheme == &H2O_URL_SCHEME_HTTPS;
    head.authority = pool_str(pool, req->authority.base, req->authority.len);
    head.request_uri.data = (uint8_t *)req->path.base;
    head.request_uri.len = req->path.len;
    if (rw && rw->query_set) {
        head.query.data = (uint8_t *)rw->query.base;
        head.query.len = rw->query.len;
    } else if (req->query_at != SIZE_MAX) {
        head.query.data = (uint8_t *)req->path.base + req->query_at + 1;
        head.query.len = req->path.len - req->query_at - 1;
    }
    head.protocol = (char *)protocol_of(req);
    Vc__Header *hs = h2o_mem_alloc_pool(pool, sizeof(Vc__Header) * (req->headers.size + 1));
    Vc__Header **hp = h2o_mem_alloc_pool(pool, sizeof(Vc__Header *) * (req->headers.size + 1));
    size_t nh = 0;
    /* h2o keeps Host (or HTTP/2's :authority) apart from the headers;
     * nginx passes it first, as HTTP_HOST. */
    if (req->authority.len) {
        vc__header__init(&hs[nh]);
        hs[nh].name = "Host";
        hs[nh].value.data = (uint8_t *)req->authority.base;
        hs[nh].value.len = req->authority.len;
        hp[nh] = &hs[nh];
        nh++;
    }
    int trusted = -1; /* asked of the peer once, and only if it matters */
    for (size_t i = 0; i < req->headers.size && nh <= req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        /* Forwarding headers from anyone but a trusted proxy never reach
         * PHP (forwarded.h). */
        if (forwarded_kind(h->name) != VC_FORWARDED_NONE) {
            if (trusted < 0)
                trusted = forwarded_trusted(f->settings, conn_state_of_req(req), req);
            if (!trusted)
                continue;
        }
        vc__header__init(&hs[nh]);
        /* HTTP/2 names are lowercase on the wire; HTTP/1 keeps the client's
         * spelling, as nginx does. */
        hs[nh].name = pool_str(pool, h->orig_name ? h->orig_name : h->name->base, h->name->len);
        hs[nh].value.data = (uint8_t *)h->value.base;
        hs[nh].value.len = h->value.len;
        hp[nh] = &hs[nh];
        nh++;
    }
    head.headers = hp;
    head.n_headers = nh;
    struct sockaddr_storage ss;
    if (req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss))
        head.remote_addr = addr_str(pool, (struct sockaddr *)&ss, &head.remote_port);
    /* h2o asks the kernel for our address on every call: once a
     * connection is enough. */
    conn_state_t *c = conn_state_of_req(req);
    if (c && !c->has_local)
        c->has_local = req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&c->local) != 0;
    if (c && c->has_local)
        head.server_addr = addr_str(pool, (struct sockaddr *)&c->local, &head.server_port);
    else if (req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&ss))
        head.server_addr = addr_str(pool, (struct sockaddr *)&ss, &head.server_port);
    if (s->conf->nhosts > 0) {
        head.server_name = s->conf->hosts[0];
    } else {
        h2o_iovec_t h = front_host_only(req->authority);
        head.server_name = pool_str(pool, h.base, h.len);
    }
    head.site = s->conf->name;
    head.document_root = (char *)s->route.root;
    head.script_filename = pool_str(pool, rt->file, strlen(rt->file));
    head.script_name = pool_str(pool, rt->script_name, strlen(rt->script_name));
    head.path_info.data = (uint8_t *)pool_str(pool, rt->path_info, strlen(rt->path_info));
    head.path_info.len = strlen(rt->path_info);
    head.document_uri.data = (uint8_t *)pool_str(pool, rt->document_uri, strlen(rt->document_uri));
    head.document_uri.len = strlen(rt->document_uri);
    head.content_length = req->entity.base ? req->entity.len : 0;
    head.has_body = req->entity.base != NULL; /* "Content-Length: 0" too */
    head.config_version = f->d.cfg->version;
    params_of(s, req, rw, &head);
    php_stats.requests++;
    req->pathconf = s->answer_conf;
    php_pool_submit(php, s, req, &head);
}

/* Each pool of the configuration ([0] the default, then cfg->pools),
 * linked once the event loop runs. */
static php_pool_t **pools;
static size_t npools;

/* The pool the site names (site.pool), else the default: its index in
 * pools. */
static int site_init(front_t *f, site_rt_t *s, void **state)
{
    const vc_config_t *cfg = f->d.cfg;
    size_t *pool = vc_calloc(1, sizeof(*pool));
    for (size_t j = 0; s->conf->pool && j < cfg->npools; j++)
        if (strcmp(cfg->pools[j].name, s->conf->pool) == 0)
            *pool = 1 + j;
    *state = pool;
    return 0;
}

/* Whether route runs the site's Socket.IO handler for a client's own
 * request: only the front's calls (sio_handler.h, which set VC_SOCKETIO)
 * may, so that nobody posts it a made-up event. Judged on the script the
 * route resolved to, after any rewrite. */
static int handler_from_outside(const seam_request_t *r)
{
    const char *h = r->site->conf->socketio_handler;
    if (h == NULL || h2o_req_getenv(r->req, H2O_STRLIT("VC_SOCKETIO"), 0) != NULL)
        return 0;
    const char *name = r->route->script_name;
    if (h[0] != '/' && name[0] == '/')
        name++; /* "socket.php" names "/socket.php" */
    return strcmp(name, h) == 0;
}

static int take(const seam_request_t *r, void *state)
{
    if (r->kind != ROUTE_PHP)
        return 0;
    if (handler_from_outside(r))
        return front_send_error(r->f, r->site, r->req, 404, "Not Found\n");
    htaccess_respond_attach(r);
    to_php(r->f, r->site, pools[*(const size_t *)state], r->req, r->route, r->rewritten);
    return 1;
}

/* A link to each pool; each site sends its PHP to its own. */
static int start(front_t *f)
{
    const vc_config_t *cfg = f->d.cfg;
    npools = 1 + cfg->npools;
    pools = vc_calloc(npools, sizeof(*pools));
    for (size_t i = 0; i < npools; i++) {
        char *name = i ? vc_asprintf("php.%s", cfg->pools[i - 1].name) : vc_strdup("php");
        char *php_ep = vc_config_endpoint(cfg, name);
        pools[i] = php_pool_new(f, i ? &cfg->pools[i - 1] : &cfg->php, php_ep);
        free(php_ep);
        free(name);
        if (pools[i] == NULL)
            return -1;
    }
    return 0;
}

static void tick(front_t *f)
{
    for (size_t i = 0; i < npools; i++)
        php_pool_tick(pools[i]);
}

static size_t inflight(const front_t *f)
{
    size_t n = 0;
    for (size_t i = 0; i < npools; i++)
        n += php_pool_inflight(pools[i]);
    return n;
}

static uint64_t inflight_now(void)
{
    return inflight(NULL);
}

static const seam_counter_t counters[] = {
    {"vc_front_php_requests_total", "php", "Requests passed to PHP.", 0, 1, &php_stats.requests, NULL, 0},
    {"vc_front_php_errors_total", "errors_5xx", "5xx answers from the PHP pool.", 0, 1, &php_stats.errors_5xx, NULL, 0},
    {"vc_front_php_inflight", "inflight", "Requests waiting for PHP now.", 1, 1, NULL, inflight_now, 0},
    {"vc_front_answers_spilled_total", NULL,
     "PHP answers larger than front.response_buffer that went to a temporary file while their client read.", 0, 0,
     &php_stats.answers_spilled, NULL, 0},
    {"vc_front_answers_throttled_total", NULL,
     "Times a worker's link was not read because its client was behind by front.response_buffer and "
     "front.response_temp_max.",
     0, 0, &php_stats.answers_throttled, NULL, 0},
    {"vc_front_php_pipelined_total", NULL,
     "Requests written to a busy lent worker behind the one it ran, while requests waited (php.pipeline_below).", 0, 0,
     &php_stats.pipelined, NULL, 0},
    {"vc_front_php_conns_lent_total", NULL,
     "Client connections lent to a PHP worker, which served their next requests itself (php.lend_connections).", 0, 0,
     &php_stats.conns_lent, NULL, 0},
    {"vc_front_php_conns_back_total", NULL, "Lent client connections a worker handed back to the front.", 0, 0,
     &php_stats.conns_back, NULL, 0},
    {"vc_front_php_conns_rescued_total", NULL,
     "Lent client connections the front took back from a worker that died, which held nothing of them.", 0, 0,
     &php_stats.conns_rescued, NULL, 0},
    {"vc_front_php_conn_requests_total", NULL,
     "Requests PHP workers served on lent connections, counted when each connection came back or closed.", 0, 0,
     &php_stats.conn_requests, NULL, 0},
    {"vc_front_answers_cut_total", NULL,
     "Answers relayed by the pool's broker cut because their client was that far behind.", 0, 0, &php_stats.answers_cut,
     NULL, 0},
};

static const seam_backend_t php_backend = {
    .name = "php",
    .stage = SEAM_ROUTED,
    .order = 60,
    .site_init = site_init,
    .take = take,
    .start = start,
    .tick = tick,
    .inflight = inflight,
    .counters = counters,
    .ncounters = VC_ARRAY_SIZE(counters),
};
SEAM_BACKEND(php_backend)
