#include "conn.h"
#include "handler.h"
#include "htaccess_errors.h"
#include "htaccess_respond.h"
#include "seam.h"
#include "vc_log.h"
#include "vc_util.h"

#include <stdio.h>
#include <string.h>

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

/* The host part of the authority, without a port. */
h2o_iovec_t front_host_only(h2o_iovec_t a)
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
    htaccess_respond_made_here(req);
    h2o_send_redirect(req, status, reason_of(status), url, len);
    return 0;
}

/* The front's own error answers, with the site's page for that status if
 * it has one. */
int front_send_error(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *body)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    return front_send_error_keeping(f, s, req, status, body, 0);
}

int front_send_error_keeping(front_t *f, site_rt_t *s, h2o_req_t *req, int status, const char *body, int keep)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    f->stats.refused++;
    htaccess_respond_made_here(req);
    if (htaccess_error_document(f, s, req, status))
        return 0;
    for (size_t i = 0; s && i < s->nerrors; i++)
        if (s->errors[i].status == status) {
            req->res.status = status;
            req->res.reason = reason_of(status);
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                           H2O_STRLIT("text/html; charset=utf-8"));
            h2o_send_inline(req, s->errors[i].body.base, s->errors[i].body.len);
            return 0;
        }
    h2o_send_error_generic(req, status, reason_of(status), body, keep ? H2O_SEND_ERROR_KEEP_HEADERS : 0);
    return 0;
}

/* Header count and size, checked before anything is dispatched. */
static int headers_too_large(front_t *f, h2o_req_t *req)
{
    size_t bytes = 0;
    for (size_t i = 0; i < req->headers.size; i++)
        bytes += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
    if (req->headers.size > (size_t)f->settings->max_headers || bytes > (size_t)f->settings->max_header_bytes) {
        vc_log(VC_LOG_NOTICE, "limits", "431 for %zu headers of %zu bytes (limits %lld, %lld)", req->headers.size,
               bytes, (long long)f->settings->max_headers, (long long)f->settings->max_header_bytes);
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
    req->pathconf = s->answer_conf;
    if (headers_too_large(f, req))
        return front_send_error(f, s, req, 431, "Request Header Fields Too Large\n");
    if (https && misdirected(f, req, conf)) {
        f->stats.misdirected++;
        return front_send_error(f, s, req, 421, "Misdirected Request\n");
    }
    /* Before the site's redirects: what must be answered on plain HTTP
     * too (an ACME challenge). */
    seam_request_t sr = {.f = f, .site = s, .req = req, .https = https};
    if (seam_dispatch(SEAM_EARLY, &sr))
        return 0;

    if (conf->https_redirect && !https && f->tls_port) {
        h2o_iovec_t host = front_host_only(req->authority);
        char port[16] = "";
        if (f->tls_port != 443)
            snprintf(port, sizeof(port), ":%u", f->tls_port);
        h2o_iovec_t url = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("https://")), host,
                                     h2o_iovec_init(port, strlen(port)), req->path);
        return redirect(f, req, 301, url.base, url.len);
    }
    if (conf->canonical_host && *conf->canonical_host) {
        /* www to bare, or back: one host name is the site's own. */
        h2o_iovec_t host = front_host_only(req->authority);
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
    h2o_iovec_t path = req->path_normalized;
    htaccess_rewritten_t rw;
    if (conf->htaccess) {
        if (htaccess_rewrite(f, s, req, https, &rw))
            return 0;
        if (rw.path.base)
            path = rw.path;
        if (rw.path.base || rw.query_set || rw.nvars || rw.nini || rw.answers)
            sr.rewritten = &rw;
    }
    route_site_t indexed;
    const route_site_t *rs = &s->route;
    if (conf->htaccess && rw.index_set) { /* a .htaccess's DirectoryIndex */
        indexed = s->route;
        indexed.index = rw.index;
        indexed.nindex = rw.nindex;
        indexed.index_set = 1;
        rs = &indexed;
    }
    sr.kind = route_resolve(rs, path.base, path.len, &rt);
    sr.route = &rt;
    if (seam_dispatch(SEAM_ROUTED, &sr))
        return 0;
    htaccess_respond_attach(&sr); /* `Header always` on the answers below */
    switch (sr.kind) {
    case ROUTE_DIR_REDIRECT: {
        h2o_iovec_t q = req->query_at != SIZE_MAX
                            ? h2o_iovec_init(req->path.base + req->query_at, req->path.len - req->query_at)
                            : h2o_iovec_init("", 0);
        h2o_iovec_t url = h2o_concat(&req->pool, req->path_normalized, h2o_iovec_init(H2O_STRLIT("/")), q);
        return redirect(f, req, 301, url.base, url.len);
    }
    case ROUTE_FORBIDDEN: return front_send_error(f, s, req, 403, "Forbidden\n");
    case ROUTE_BAD:
        vc_log(VC_LOG_NOTICE, "route", "400 for a bad path: %s", rt.why);
        return front_send_error(f, s, req, 400, "Bad Request\n");
    case ROUTE_PHP:    /* no pool took it */
    case ROUTE_STATIC: /* no file backend took it */
    case ROUTE_NOT_FOUND:
    default: return front_send_error(f, s, req, 404, "Not Found\n");
    }
}

void handler_register(front_t *f, h2o_pathconf_t *pathconf)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    handler_t *h = (handler_t *)h2o_create_handler(pathconf, sizeof(*h));
    h->super.on_req = on_req;
    h->f = f;
}
