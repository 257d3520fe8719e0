/*
 * The panel's one handler: the headers every answer carries, the
 * client's address, the session, then the route table (the API) or a
 * page. Every check a route relies on is made here, before it runs: a
 * route cannot forget one.
 */
#include "forms.h"
#include "panel.h"
#include "step_up.h"
#include "sessions.h"
#include "vc_util.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scripts, styles and images come from the panel alone; nothing may
 * frame it; forms post only to it. No inline script or style: an
 * injected tag runs nothing. */
static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                          "connect-src 'self'; font-src 'self'; manifest-src 'self'; form-action 'self'; "
                          "frame-ancestors 'none'; base-uri 'none'";

static const struct {
    const char *name, *value;
} always[] = {
    {"content-security-policy", CSP},
    {"x-content-type-options", "nosniff"},
    {"x-frame-options", "DENY"},
    {"referrer-policy", "no-referrer"},
    {"strict-transport-security", "max-age=31536000"},
    {"cross-origin-opener-policy", "same-origin"},
    {"cross-origin-resource-policy", "same-origin"},
    {"permissions-policy", "camera=(), microphone=(), geolocation=(), payment=()"},
};

void http_header(preq_t *r, const char *name, const char *value)
{
    h2o_mem_pool_t *pool = &r->req->pool;
    size_t nlen = strlen(name), vlen = strlen(value);
    h2o_iovec_t n = h2o_strdup(pool, name, nlen), v = h2o_strdup(pool, value, vlen);
    h2o_add_header_by_str(pool, &r->req->res.headers, n.base, n.len, 1, NULL, v.base, v.len);
}

static void send_body(preq_t *r, int status, const char *type, const char *body, size_t len)
{
    h2o_req_t *req = r->req;
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : "";
    http_header(r, "content-type", type);
    h2o_send_inline(req, body, len);
}

void http_json(preq_t *r, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        text = vc_strdup("{}");
    http_header(r, "cache-control", "no-store");
    send_body(r, status, "application/json; charset=utf-8", text, strlen(text));
    free(text);
}

void http_error(preq_t *r, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (status >= 400)
        r->p->refused++;
    http_json(r, status, json_pack("{s:s}", "error", msg));
}

/* The peer, or the client a trusted proxy names in X-Forwarded-For. An
 * untrusted peer's X-Forwarded-For is ignored: a client cannot choose
 * the address its failed sign-ins count against. */
static void client_addr(preq_t *r)
{
    struct sockaddr_storage ss;
    socklen_t len = r->req->conn->callbacks->get_peername(r->req->conn, (struct sockaddr *)&ss);
    if (len == 0) {
        strcpy(r->addr, "unknown");
        return;
    }
    vc_sockaddr_host((struct sockaddr *)&ss, r->addr, sizeof(r->addr));
    int trusted = 0;
    for (size_t i = 0; i < r->p->nproxies && !trusted; i++)
        trusted = vc_cidr_match(&r->p->proxies[i], (struct sockaddr *)&ss);
    if (!trusted)
        return;
    ssize_t h = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("x-forwarded-for"), -1);
    if (h >= 0) {
        h2o_iovec_t v = r->req->headers.entries[h].value;
        char addr[sizeof(r->addr)];
        if (form_forwarded_for(v.base, v.len, addr, sizeof(addr)) > 0)
            strcpy(r->addr, addr);
    }
}

static h2o_iovec_t header(preq_t *r, const h2o_token_t *token)
{
    ssize_t h = h2o_find_header(&r->req->headers, token, -1);
    return h >= 0 ? r->req->headers.entries[h].value : h2o_iovec_init(NULL, 0);
}

static void find_session(preq_t *r)
{
    /* Every Cookie header (HTTP/2 splits them), every cookie of the name
     * in each, until one is a live session. */
    for (ssize_t h = -1; (h = h2o_find_header(&r->req->headers, H2O_TOKEN_COOKIE, h)) >= 0;) {
        h2o_iovec_t c = r->req->headers.entries[h].value;
        char token[SESSION_TOKEN_LEN + 1];
        for (size_t pos = 0, n = 0; pos < c.len && n < 8; n++)
            if (form_cookie(c.base, c.len, SESSION_COOKIE, &pos, token, sizeof(token)) == SESSION_TOKEN_LEN &&
                sessions_find(r->p, token, r))
                return;
    }
}

/* A change must come from the panel's own pages: an Origin, if the
 * browser sent one, names this host; and the session's CSRF token is in
 * X-CSRF-Token (a header another site's form cannot set). */
int http_same_origin(preq_t *r)
{
    ssize_t h = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("origin"), -1);
    if (h < 0)
        return 1;
    h2o_iovec_t o = r->req->headers.entries[h].value;
    h2o_iovec_t host = r->req->input.authority;
    return o.len == 8 + host.len && memcmp(o.base, "https://", 8) == 0 && memcmp(o.base + 8, host.base, host.len) == 0;
}

static int csrf_ok(preq_t *r)
{
    ssize_t h = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("x-csrf-token"), -1);
    if (h < 0 || r->csrf[0] == '\0')
        return 0;
    h2o_iovec_t v = r->req->headers.entries[h].value;
    size_t n = strlen(r->csrf);
    return v.len == n && sodium_memcmp(v.base, r->csrf, n) == 0;
}

static const route_t *find_route(const char *method, const char *path, int *other_method)
{
    static const struct {
        const route_t *routes;
        const size_t *n;
    } tables[] = {
        /* clang-format off: a table to read down */
        {api_auth_routes, &api_auth_nroutes},
        {api_suite_routes, &api_suite_nroutes},
        {api_sites_routes, &api_sites_nroutes},
        {api_users_routes, &api_users_nroutes},
        {api_realtime_routes, &api_realtime_nroutes},
        {api_certs_routes, &api_certs_nroutes},
        {api_cluster_routes, &api_cluster_nroutes},
        {terminal_routes, &terminal_nroutes},
        {warm_routes, &warm_nroutes},
        /* clang-format on */
    };
    *other_method = 0;
    for (size_t t = 0; t < VC_ARRAY_SIZE(tables); t++)
        for (size_t i = 0; i < *tables[t].n; i++) {
            const route_t *rt = &tables[t].routes[i];
            if (strcmp(rt->path, path) != 0)
                continue;
            if (strcmp(rt->method, method) == 0)
                return rt;
            *other_method = 1;
        }
    return NULL;
}

/* A refusal for who the caller is: "need" says what was missing (the
 * roles test reads it; docs/panel.md). */
static void denied(preq_t *r, int status, const char *need, const char *why)
{
    r->p->refused++;
    http_json(r, status, json_pack("{s:s,s:s}", "error", why, "need", need));
}

static void api(preq_t *r, const char *method)
{
    int other;
    const route_t *rt = find_route(method, r->path, &other);
    if (rt == NULL) {
        if (other)
            http_error(r, 405, "%s is not allowed on %s", method, r->path);
        else
            http_error(r, 404, "no such API call: %s", r->path);
        return;
    }
    int change = strcmp(method, "GET") != 0;
    if (change && !http_same_origin(r)) {
        http_error(r, 403, "a change from another origin");
        return;
    }
    if (rt->access != ACCESS_OPEN) {
        if (r->sid[0] == '\0' || r->user[0] == '\0' || r->role[0] == '\0') {
            denied(r, 401, "signin", "sign in first");
            return;
        }
        if (change && !csrf_ok(r)) {
            denied(r, 403, "csrf", "a change needs the session's CSRF token (X-CSRF-Token)");
            return;
        }
        if (rt->access >= ACCESS_VIEWER && r->must_change) {
            denied(r, 403, "new_password", "choose a new password first");
            return;
        }
        if (rt->access >= ACCESS_ADMIN && strcmp(r->role, "admin") != 0) {
            char why[64];
            snprintf(why, sizeof(why), "a %s may not change anything", r->role);
            denied(r, 403, "admin", why);
            return;
        }
    }
    if (change) {
        h2o_iovec_t type = header(r, H2O_TOKEN_CONTENT_TYPE);
        if (type.base == NULL || type.len < 16 || strncasecmp(type.base, "application/json", 16) != 0) {
            http_error(r, 415, "a change is sent as application/json");
            return;
        }
        char why[256];
        r->body = form_json(r->req->entity.base ? r->req->entity.base : "", r->req->entity.len, why, sizeof(why));
        if (r->body == NULL) {
            http_error(r, 400, "%s", why);
            return;
        }
    }
    if (rt->access == ACCESS_STEP_UP) {
        /* Audited, if refused, under the route's name: "users.add". */
        char action[64];
        snprintf(action, sizeof(action), "%s", r->path + strlen("/api/"));
        for (char *c = action; *c; c++)
            *c = *c == '/' ? '.' : *c;
        if (!step_up(r, action))
            return;
    }
    rt->run(r);
}

static const struct {
    const char *ext, *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

/* A page or one of its files, from the pages directory: one level of
 * folders at most, each part a plain name (forms.c), so no path leaves
 * the directory. */
static void page(preq_t *r)
{
    const char *path = strcmp(r->path, "/") == 0 ? "/index.html" : r->path;
    char part[128];
    const char *s = path + 1, *type = NULL;
    int parts = 0, ok = strlen(path) < 200;
    while (ok && *s) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        ok = n > 0 && n < sizeof(part) && ++parts <= 2;
        if (ok) {
            memcpy(part, s, n);
            part[n] = '\0';
            ok = form_name_ok(part);
        }
        s += n + (slash != NULL);
        ok = ok && !(slash && *s == '\0');
    }
    for (size_t i = 0; ok && i < VC_ARRAY_SIZE(types) && !type; i++) {
        size_t el = strlen(types[i].ext), pl = strlen(path);
        if (pl > el && strcmp(path + pl - el, types[i].ext) == 0)
            type = types[i].type;
    }
    if (!ok || type == NULL) {
        http_error(r, 404, "not found");
        return;
    }
    char *file = vc_asprintf("%s%s", r->p->pages, path);
    size_t len = 0;
    char *body = vc_read_file(file, &len);
    free(file);
    if (body == NULL) {
        http_error(r, 404, "not found");
        return;
    }
    /* Asked again at each load (a new version of the suite changes them),
     * answered 304 while they are the same. */
    unsigned char h[12];
    char tag[2 * sizeof(h) + 3] = "\"";
    crypto_generichash(h, sizeof(h), (const unsigned char *)body, len, NULL, 0);
    sodium_bin2hex(tag + 1, sizeof(tag) - 2, h, sizeof(h));
    strcat(tag, "\"");
    http_header(r, "cache-control", "no-cache");
    http_header(r, "etag", tag);
    ssize_t inm = h2o_find_header(&r->req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
    h2o_iovec_t have = inm == -1 ? h2o_iovec_init(NULL, 0) : r->req->headers.entries[inm].value;
    /* A list of tags, or one (RFC 9110 13.1.2). */
    if (have.len &&
        (memmem(have.base, have.len, tag, strlen(tag)) || h2o_memis(have.base, have.len, H2O_STRLIT("*")))) {
        r->req->res.status = 304;
        r->req->res.reason = "Not Modified";
        h2o_send_inline(r->req, NULL, 0);
    } else {
        send_body(r, 200, type, body, len);
    }
    free(body);
}

static int raw_path_suspect(const char *path, size_t len)
{
    static const char *const bad[] = {"/.", "%2e", "%2f", "%5c", "%00", "\\"};
    for (size_t i = 0; i < len; i++)
        for (size_t b = 0; b < VC_ARRAY_SIZE(bad); b++) {
            size_t n = strlen(bad[b]);
            if (i + n <= len && strncasecmp(path + i, bad[b], n) == 0)
                return 1;
        }
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    panel_t *p = *(panel_t **)(self + 1);
    preq_t *r = h2o_mem_alloc_pool(&req->pool, sizeof(*r));
    memset(r, 0, sizeof(*r));
    r->p = p;
    r->req = req;
    p->served++;
    h2o_iovec_t path = req->path_normalized;
    size_t q = req->query_at == SIZE_MAX ? req->path.len : req->query_at;
    r->path = h2o_strdup(&req->pool, path.base, path.len).base;
    r->query = q < req->path.len ? h2o_strdup(&req->pool, req->path.base + q + 1, req->path.len - q - 1).base : "";
    for (size_t i = 0; i < VC_ARRAY_SIZE(always); i++)
        http_header(r, always[i].name, always[i].value);
    client_addr(r);
    char method[8] = "";
    if (req->method.len < sizeof(method))
        memcpy(method, req->method.base, req->method.len);
    /* h2o resolves dot segments (and their escapes) before we see the
     * path: a request that needed it, or hides a separator or a NUL in
     * an escape, is refused whole rather than served as resolved. */
    if (strlen(r->path) != path.len || raw_path_suspect(req->path.base, q)) {
        http_error(r, 400, "a path with dot segments, escaped separators or NUL bytes");
        return 0;
    }
    if (strncmp(r->path, "/api/", 5) == 0) {
        find_session(r);
        api(r, method);
        json_decref(r->body);
        return 0;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        http_error(r, 405, "pages are read with GET");
        return 0;
    }
    page(r);
    return 0;
}

void http_register(panel_t *p, h2o_hostconf_t *host)
{
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *h = h2o_create_handler(path, sizeof(h2o_handler_t) + sizeof(panel_t *));
    *(panel_t **)(h + 1) = p;
    h->on_req = on_req;
}
