#include "handler.h"
#include "beneath.h"
#include "backend.h"
#include "ranges.h"
#include "vc_log.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct handler {
    h2o_handler_t super;
    front_t *f;
} handler_t;

static site_rt_t *site_for(front_t *f, h2o_req_t *req)
{
    const vc_site_t *conf = vc_config_site_for_host(f->d.cfg, req->authority.base, req->authority.len);
    for (size_t i = 0; i < f->nsites; i++)
        if (f->sites[i].conf == conf)
            return &f->sites[i];
    return &f->sites[0];
}

static int same_certificate(const vc_site_t *a, const vc_site_t *b)
{
    /* No tls_cert: both serve the generated certificate. */
    if (a->tls_cert == NULL || b->tls_cert == NULL)
        return a->tls_cert == b->tls_cert;
    return strcmp(a->tls_cert, b->tls_cert) == 0;
}

/* RFC 9110, 15.5.20: a TLS connection whose SNI chose one site's
 * certificate may not carry requests for a site with another certificate
 * (a client that reused a connection it had for a different name, or one
 * that named one host to the handshake and another to HTTP). */
static int misdirected(front_t *f, h2o_req_t *req, const vc_site_t *host_site)
{
    conn_state_t *c = conn_state_of_req(req);
    const char *sni = c ? c->sni : NULL;
    if (sni == NULL || *sni == '\0')
        return 0; /* no name given: the default certificate, any site */
    const vc_site_t *tls_site = vc_config_site_for_host(f->d.cfg, sni, strlen(sni));
    return tls_site != host_site && !same_certificate(tls_site, host_site);
}

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

/* The host part of the authority, without a port. */
static h2o_iovec_t host_only(h2o_iovec_t a)
{
    size_t n = a.len;
    if (n && a.base[0] == '[') {
        const char *rb = memchr(a.base, ']', n);
        if (rb)
            n = (size_t)(rb - a.base) + 1;
    } else {
        const char *c = memchr(a.base, ':', n);
        if (c)
            n = (size_t)(c - a.base);
    }
    return h2o_iovec_init(a.base, n);
}

static void to_php(front_t *f, site_rt_t *s, h2o_req_t *req, const route_t *rt)
{
    h2o_mem_pool_t *pool = &req->pool;
    Vc__RequestHead head = VC__REQUEST_HEAD__INIT;
    head.method = pool_str(pool, req->method.base, req->method.len);
    head.scheme = req->scheme == &H2O_URL_SCHEME_HTTPS ? "https" : "http";
    head.https = req->scheme == &H2O_URL_SCHEME_HTTPS;
    head.authority = pool_str(pool, req->authority.base, req->authority.len);
    head.request_uri.data = (uint8_t *)req->path.base;
    head.request_uri.len = req->path.len;
    if (req->query_at != SIZE_MAX) {
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
    for (size_t i = 0; i < req->headers.size && nh <= req->headers.size; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
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
        h2o_iovec_t h = host_only(req->authority);
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
    f->stats.php++;
    req->pathconf = s->php_conf;
    backend_submit(s->pool, req, &head);
}

static const char *reason_of(int status)
{
    switch (status) {
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
    }
}

static int redirect(front_t *f, h2o_req_t *req, int status, const char *url, size_t len)
{
    f->stats.redirects++;
    h2o_send_redirect(req, status, reason_of(status), url, len);
    return 0;
}

/* The front's own error answers, with the site's page for that status if
 * it has one. */
static int send_error(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *body)
{
    f->stats.refused++;
    for (size_t i = 0; s && i < s->nerrors; i++)
        if (s->errors[i].status == status) {
            req->res.status = status;
            req->res.reason = reason_of(status);
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                           H2O_STRLIT("text/html; charset=utf-8"));
            h2o_send_inline(req, s->errors[i].body.base, s->errors[i].body.len);
            return 0;
        }
    h2o_send_error_generic(req, status, reason_of(status), body, 0);
    return 0;
}

/* Header count and size, checked before anything is dispatched. */
static int headers_too_large(front_t *f, h2o_req_t *req)
{
    size_t bytes = 0;
    for (size_t i = 0; i < req->headers.size; i++)
        bytes += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    if (req->headers.size > (size_t)f->d.cfg->front.max_headers || bytes > (size_t)f->d.cfg->front.max_header_bytes) {
        vc_log(VC_LOG_NOTICE, "limits", "431 for %zu headers of %zu bytes (limits %lld, %lld)", req->headers.size,
               bytes, (long long)f->d.cfg->front.max_headers, (long long)f->d.cfg->front.max_header_bytes);
        return 1;
    }
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    front_t *f = ((handler_t *)self)->f;
    f->stats.requests++;
    conn_state_t *c = conn_state_of_req(req);
    if (c && c->cut) {
        /* Being closed over a budget: h2o still parses what it has read
         * (thousands of streams for a flood); each costs the least. */
        f->stats.refused++;
        h2o_send_error_generic(req, 429, "Too Many Requests", "Too Many Requests\n", 0);
        return 0;
    }
    if (c)
        c->requests++;
    site_rt_t *s = site_for(f, req);
    const vc_site_t *conf = s->conf;
    int https = req->scheme == &H2O_URL_SCHEME_HTTPS;
    req->pathconf = s->php_conf;
    if (headers_too_large(f, req))
        return send_error(f, s, req, 431, "Request Header Fields Too Large\n");
    if (https && misdirected(f, req, conf)) {
        f->stats.misdirected++;
        return send_error(f, s, req, 421, "Misdirected Request\n");
    }

    if (conf->https_redirect && !https && f->tls_port) {
        h2o_iovec_t host = host_only(req->authority);
        char port[16] = "";
        if (f->tls_port != 443)
            snprintf(port, sizeof(port), ":%u", f->tls_port);
        h2o_iovec_t url = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("https://")), host,
                                     h2o_iovec_init(port, strlen(port)), req->path);
        return redirect(f, req, 301, url.base, url.len);
    }
    if (conf->canonical_host && *conf->canonical_host) {
        /* www to bare, or back: one host name is the site's own. */
        h2o_iovec_t host = host_only(req->authority);
        if (!h2o_lcstris(host.base, host.len, conf->canonical_host, strlen(conf->canonical_host))) {
            const char *port_at = req->authority.base + host.len;
            size_t port_len = req->authority.len - host.len;
            h2o_iovec_t url = h2o_concat(&req->pool, h2o_iovec_init(https ? "https://" : "http://", https ? 8 : 7),
                                         h2o_iovec_init(conf->canonical_host, strlen(conf->canonical_host)),
                                         h2o_iovec_init(port_at, port_len), req->path);
            return redirect(f, req, 301, url.base, url.len);
        }
    }
    for (size_t i = 0; i < s->nredirects; i++) {
        const redirect_rule_t *rr = &s->redirects[i];
        if (h2o_memis(req->path_normalized.base, req->path_normalized.len, rr->from, strlen(rr->from)))
            return redirect(f, req, rr->status, rr->to, strlen(rr->to));
    }
    if (https && conf->hsts_max_age > 0) {
        char v[64];
        int n = snprintf(v, sizeof(v), "max-age=%lld", (long long)conf->hsts_max_age);
        h2o_iovec_t val = h2o_strdup(&req->pool, v, (size_t)n);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_STRICT_TRANSPORT_SECURITY, NULL, val.base, val.len);
    }

    /* One request at a time per process: the route can live here. */
    static route_t rt;
    route_kind_t kind = route_resolve(&s->route, req->path_normalized.base, req->path_normalized.len, &rt);
    switch (kind) {
    case ROUTE_PHP: to_php(f, s, req, &rt); return 0;
    case ROUTE_STATIC:
        f->stats.statics++;
        req->pathconf = s->static_conf;
        tame_ranges(f, req, rt.file);
        beneath_begin(s->route.root, s->route.root_len);
        int r = s->files->on_req(s->files, req); /* opens what it serves now, not later */
        beneath_end();
        return r;
    case ROUTE_DIR_REDIRECT: {
        h2o_iovec_t q = req->query_at != SIZE_MAX
                            ? h2o_iovec_init(req->path.base + req->query_at, req->path.len - req->query_at)
                            : h2o_iovec_init("", 0);
        h2o_iovec_t url = h2o_concat(&req->pool, req->path_normalized, h2o_iovec_init(H2O_STRLIT("/")), q);
        return redirect(f, req, 301, url.base, url.len);
    }
    case ROUTE_FORBIDDEN: return send_error(f, s, req, 403, "Forbidden\n");
    case ROUTE_BAD:
        vc_log(VC_LOG_NOTICE, "route", "400 for a bad path: %s", rt.why);
        return send_error(f, s, req, 400, "Bad Request\n");
    case ROUTE_NOT_FOUND:
    default: return send_error(f, s, req, 404, "Not Found\n");
    }
}

void handler_register(front_t *f, h2o_pathconf_t *pathconf)
{
    handler_t *h = (handler_t *)h2o_create_handler(pathconf, sizeof(*h));
    h->super.on_req = on_req;
    h->f = f;
}
