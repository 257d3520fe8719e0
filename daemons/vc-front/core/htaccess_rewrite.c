/*
 * A request through its site's .htaccess rewrite rules (htaccess_rewrite.h):
 * each pass finds the file the path maps to (as Apache's directory walk:
 * up to the first part that is missing or a file, the rest its path info),
 * merges the rules of the directories down to it, and applies them
 * (rewrite.h), then their Redirects and the directory slash; an internal
 * redirect starts the next pass on its path.
 */
#include "htaccess_rewrite.h"
#include "handler.h"
#include "htaccess_cache.h"
#include "rewrite.h"
#include "vc_log.h"
#include "vc_util.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PASSES 10 /* Apache's LimitInternalRecursion */

static uint64_t rewritten, answered;

uint64_t htaccess_rewrite_count_internal(void)
{
    return rewritten;
}

uint64_t htaccess_rewrite_count_answered(void)
{
    return answered;
}

#define MAX_CHAIN 128 /* directories from the root down that a pass looks at */

/* What the .htaccess files of a pass's directories say: their rewrite
 * rules merged, and the files themselves (for their Redirects). */
typedef struct chain {
    rewrite_conf_t conf;
    const htaccess_t *files[MAX_CHAIN]; /* root first */
    size_t nfiles;
    int rules, redirects; /* rewrite rules apply; some file has Redirects */
    int php;              /* some file has php_value or php_flag */
    int answers;          /* some file has response directives */
} chain_t;

/* The directories from root down to dir (len bytes), and dir itself when
 * it is one: 1 if their files have anything for a pass to do. */
static int merge(chain_t *c, const char *path, size_t root_len, size_t len, uint64_t now)
{
    uint64_t gen;
    do {
        gen = htaccess_cache_generation();
        rewrite_conf_init(&c->conf);
        c->nfiles = 0;
        c->redirects = c->php = c->answers = 0;
        for (size_t at = root_len;;) {
            int is_dir;
            const htaccess_t *h = htaccess_cached(path, at, now, &is_dir);
            if (!is_dir)
                break;
            if (h && c->nfiles < MAX_CHAIN) {
                c->files[c->nfiles++] = h;
                rewrite_conf_merge(&c->conf, htaccess_rewrite_rules(h), path, at);
                c->redirects |= htaccess_has_redirects(h);
                const char *const *names, *const *values;
                c->php |= htaccess_php_settings(h, &names, &values) > 0;
                c->answers |= htaccess_has_answers(h);
            }
            if (at >= len)
                break;
            const char *next = memchr(path + at + 1, '/', len - at - 1);
            at = next ? (size_t)(next - path) : len;
        }
    } while (gen != htaccess_cache_generation()); /* the cache started again: what it gave is gone */
    c->rules = c->conf.on && c->conf.nrules > 0;
    return c->rules || c->redirects || c->php;
}

/* The PHP settings of the chain's files, a nearer directory's winning. */
static void php_settings(const chain_t *c, htaccess_rewritten_t *out)
{
    out->nini = 0;
    for (size_t f = 0; f < c->nfiles; f++) {
        const char *const *names, *const *values;
        size_t n = htaccess_php_settings(c->files[f], &names, &values);
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < out->nini && strcmp(out->ini_names[j], names[i]))
                j++;
            if (j == HTACCESS_MAX_PHP)
                continue;
            out->ini_names[j] = names[i];
            out->ini_values[j] = values[i];
            out->nini += j == out->nini;
        }
    }
}

/* mod_alias's Redirects of the pass's directories, the nearest first
 * (fixup_redir()): the action, with the URL or status. */
static rewrite_action_t alias_redirect(const chain_t *c, rewrite_request_t *r, const char *path, const char **uri,
                                       int *status)
{
    char url[8192];
    for (size_t i = c->nfiles; i-- > 0;) {
        if (!htaccess_has_redirects(c->files[i]) || !htaccess_redirect(c->files[i], path, status, url, sizeof(url)))
            continue;
        if (*status < 300 || *status > 399)
            return REWRITE_STATUS;
        int dflt = !strcmp(r->server_port, r->https ? "443" : "80");
        size_t len =
            strlen(url) + strlen(r->server_name) + strlen(r->server_port) + (r->args ? strlen(r->args) : 0) + 32;
        char *out = rewrite_alloc(r, len);
        int query = r->args && !strchr(url, '?'); /* the request's query, unless the URL has its own */
        if (url[0] == '/')
            snprintf(out, len, "%s://%s%s%s%s%s%s", r->scheme, r->server_name, dflt ? "" : ":",
                     dflt ? "" : r->server_port, url, query ? "?" : "", query ? r->args : "");
        else
            snprintf(out, len, "%s%s%s", url, query ? "?" : "", query ? r->args : "");
        *uri = out;
        return REWRITE_REDIRECT;
    }
    return REWRITE_NONE;
}

/* The file a path maps to (Apache's r->filename) and what follows it:
 * 1 if the whole path is a directory. */
static int walk(rewrite_request_t *r, const char *full, size_t root_len)
{
    size_t len = strlen(full);
    r->filename = full;
    r->path_info = "";
    char buf[PATH_MAX];
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, full, len + 1);
    for (size_t at = root_len + 1; at < len;) {
        size_t end = at + strcspn(full + at, "/");
        buf[end] = '\0';
        struct stat st;
        int is_dir = rewrite_stat(r, buf, &st) && S_ISDIR(st.st_mode);
        buf[end] = full[end];
        if (!is_dir) {
            r->filename = rewrite_strndup(r, full, end);
            r->path_info = full + end;
            return 0;
        }
        at = end + 1;
    }
    return 1;
}

static int is_dir(rewrite_request_t *r, const char *path)
{
    struct stat st;
    return rewrite_stat(r, path, &st) && S_ISDIR(st.st_mode);
}

/* The URL mod_dir redirects a directory to: its path, a slash, the query. */
static const char *slash_url(rewrite_request_t *r, const char *path)
{
    const char *escaped = rewrite_escape_uri(r, path);
    int dflt = !strcmp(r->server_port, r->https ? "443" : "80");
    size_t len =
        strlen(escaped) + strlen(r->server_name) + strlen(r->server_port) + (r->args ? strlen(r->args) : 0) + 32;
    char *url = rewrite_alloc(r, len);
    snprintf(url, len, "%s://%s%s%s%s/%s%s", r->scheme, r->server_name, dflt ? "" : ":", dflt ? "" : r->server_port,
             escaped, r->args ? "?" : "", r->args ? r->args : "");
    return url;
}

static const char *header(void *ctx, const char *name)
{
    h2o_req_t *req = ctx;
    if (!strcasecmp(name, "Host"))
        return req->authority.len ? h2o_strdup(&req->pool, req->authority.base, req->authority.len).base : NULL;
    char lower[256]; /* h2o keeps names in lower case */
    size_t len = strlen(name);
    if (len >= sizeof(lower))
        return NULL;
    for (size_t i = 0; i <= len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    ssize_t i = h2o_find_header_by_str(&req->headers, lower, len, -1);
    if (i < 0)
        return NULL;
    return h2o_strdup(&req->pool, req->headers.entries[i].value.base, req->headers.entries[i].value.len).base;
}

/* What a rule may read of the connection, when it does. */
static const char *lazy(void *ctx, const char *name)
{
    h2o_req_t *req = ctx;
    struct sockaddr_storage ss;
    char addr[64] = "";
    if (!strcmp(name, "THE_REQUEST")) {
        const char *proto = req->version >= 0x200 ? "HTTP/2.0" : req->version == 0x100 ? "HTTP/1.0" : "HTTP/1.1";
        return h2o_concat(&req->pool, req->method, h2o_iovec_init(H2O_STRLIT(" ")), req->path,
                          h2o_iovec_init(H2O_STRLIT(" ")), h2o_iovec_init(proto, strlen(proto)))
            .base;
    }
    int local = !strcmp(name, "SERVER_ADDR");
    socklen_t got = local ? req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&ss)
                          : req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (!got)
        return "";
    uint32_t port = vc_sockaddr_host((struct sockaddr *)&ss, addr, sizeof(addr));
    if (!strcmp(name, "REMOTE_PORT"))
        snprintf(addr, sizeof(addr), "%u", port);
    return h2o_strdup(&req->pool, addr, SIZE_MAX).base;
}

/* What %{...} reads of the request, once. */
static void describe(rewrite_request_t *r, site_rt_t *s, h2o_req_t *req, int https)
{
    h2o_iovec_t host = front_host_only(req->authority);
    r->method = h2o_strdup(&req->pool, req->method.base, req->method.len).base;
    r->protocol = req->version >= 0x200 ? "HTTP/2.0" : req->version == 0x100 ? "HTTP/1.0" : "HTTP/1.1";
    r->scheme = https ? "https" : "http";
    r->https = https;
    r->server_name = h2o_strdup(&req->pool, host.base, host.len).base;
    r->server_port =
        req->authority.len > host.len + 1
            ? h2o_strdup(&req->pool, req->authority.base + host.len + 1, req->authority.len - host.len - 1).base
        : https ? "443"
                : "80";
    r->document_root = s->route.root;
    r->remote_addr = r->remote_port = r->server_addr = r->the_request = NULL; /* lazy() */
    r->header = header;
    r->lazy = lazy;
    r->header_ctx = req;
}

/* The variables PHP gets: REDIRECT_URL and REDIRECT_QUERY_STRING of the
 * pass before the last, and what the rules set. */
static void hand_over(h2o_req_t *req, rewrite_request_t *r, const char *prev_uri, const char *prev_args,
                      htaccess_rewritten_t *out)
{
    size_t n = r->nenv + 2;
    out->names = h2o_mem_alloc_pool(&req->pool, n * sizeof(*out->names));
    out->values = h2o_mem_alloc_pool(&req->pool, n * sizeof(*out->values));
    out->nvars = 0;
    for (size_t i = 0; i < r->nenv; i++) {
        out->names[out->nvars] = h2o_strdup(&req->pool, r->env[i].name, SIZE_MAX).base;
        out->values[out->nvars++] = h2o_strdup(&req->pool, r->env[i].value, SIZE_MAX).base;
    }
    if (prev_uri) {
        out->names[out->nvars] = "REDIRECT_URL";
        out->values[out->nvars++] = h2o_strdup(&req->pool, prev_uri, SIZE_MAX).base;
    }
    if (prev_args) {
        out->names[out->nvars] = "REDIRECT_QUERY_STRING";
        out->values[out->nvars++] = h2o_strdup(&req->pool, prev_args, SIZE_MAX).base;
    }
    for (size_t i = 0; i < r->nvary; i++) {
        const char *v = r->vary[i];
        h2o_iovec_t name = h2o_iovec_init(H2O_STRLIT("vary"));
        ssize_t at = h2o_find_header_by_str(&req->res.headers, name.base, name.len, -1);
        if (at >= 0 && h2o_contains_token(req->res.headers.entries[at].value.base,
                                          req->res.headers.entries[at].value.len, v, strlen(v), ','))
            continue;
        h2o_iovec_t value = h2o_strdup(&req->pool, v, SIZE_MAX);
        if (at < 0)
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL, value.base, value.len);
        else
            req->res.headers.entries[at].value =
                h2o_concat(&req->pool, req->res.headers.entries[at].value, h2o_iovec_init(H2O_STRLIT(",")), value);
    }
}

/* An internal redirect: the variables so far get REDIRECT_ before their
 * names, and REDIRECT_STATUS is 200. */
static void redirect_internally(rewrite_request_t *r)
{
    for (size_t i = 0; i < r->nenv; i++) {
        size_t len = strlen(r->env[i].name);
        char *name = rewrite_alloc(r, len + 10);
        memcpy(name, "REDIRECT_", 9);
        memcpy(name + 9, r->env[i].name, len + 1);
        r->env[i].name = name;
    }
    rewrite_setenv(r, "REDIRECT_STATUS", "200");
}

static int answer(front_t *f, site_rt_t *s, h2o_req_t *req, rewrite_action_t action, const char *uri, int status)
{
    answered++;
    if (action == REWRITE_REDIRECT) {
        f->stats.redirects++;
        h2o_iovec_t url = h2o_strdup(&req->pool, uri, SIZE_MAX);
        const char *reason = status == 301   ? "Moved Permanently"
                             : status == 303 ? "See Other"
                             : status == 307 ? "Temporary Redirect"
                             : status == 308 ? "Permanent Redirect"
                                             : "Found";
        h2o_send_redirect(req, status, reason, url.base, url.len);
        return 1;
    }
    static const struct {
        int status;
        const char *body;
    } bodies[] = {{400, "Bad Request\n"}, {403, "Forbidden\n"}, {404, "Not Found\n"}, {410, "Gone\n"}};
    const char *body = "Internal Server Error\n";
    for (size_t i = 0; i < VC_ARRAY_SIZE(bodies); i++)
        if (bodies[i].status == status)
            body = bodies[i].body;
    front_send_error_keeping(f, s, req, status, body, 1);
    return 1;
}

int htaccess_rewrite(front_t *f, site_rt_t *s, h2o_req_t *req, int https, htaccess_rewritten_t *out)
{
    VC_CHECK_OBJ(f, FRONT_MAGIC);
    memset(out, 0, sizeof(*out));
    static char arena[32768];
    static chain_t chain;
    rewrite_request_t r = {.arena = arena, .arena_size = sizeof(arena)};
    uint64_t now = vc_mono_ms() / 1000;
    const route_site_t *rs = &s->route;
    char path[PATH_MAX], full[PATH_MAX];
    size_t plen = req->path_normalized.len;
    if (plen >= sizeof(path) || rs->root_len + plen + 1 >= sizeof(full))
        return 0; /* the route refuses it */
    memcpy(path, req->path_normalized.base, plen);
    path[plen] = '\0';
    r.args = req->query_at != SIZE_MAX
                 ? rewrite_strndup(&r, req->path.base + req->query_at + 1, req->path.len - req->query_at - 1)
                 : NULL;
    const char *client_args = r.args, *prev_uri = NULL, *prev_args = NULL;
    int described = 0, passes = 0;
    for (;;) {
        size_t len = strlen(path); /* root_len + len < PATH_MAX: checked where path is set */
        memcpy(full, rs->root, rs->root_len);
        memcpy(full + rs->root_len, path, len + 1);
        size_t dir_len = rs->root_len + len;
        while (dir_len > rs->root_len && full[dir_len - 1] == '/')
            dir_len--;
        int found = merge(&chain, full, rs->root_len, dir_len, now), whole_dir = 0;
        const char *uri = NULL;
        int status = 0;
        rewrite_action_t action = REWRITE_NONE;
        if (found) {
            if (!described) {
                describe(&r, s, req, https);
                described = 1;
            }
            r.uri = rewrite_strdup(&r, path);
            whole_dir = walk(&r, rewrite_strdup(&r, full), rs->root_len);
            if (chain.rules)
                action = rewrite_round(&chain.conf, &r, &uri, &status);
            if (r.out_of_room) {
                action = REWRITE_STATUS;
                status = 500;
            }
            /* mod_alias's Redirects come after the rewrite rules, and win
             * over an internal redirect they made. */
            if ((action == REWRITE_NONE || action == REWRITE_INTERNAL) && chain.redirects) {
                const char *to = NULL;
                int st = 0;
                rewrite_action_t a = alias_redirect(&chain, &r, path, &to, &st);
                if (a != REWRITE_NONE) {
                    action = a;
                    uri = to;
                    status = st;
                }
            }
        }
        if ((action == REWRITE_NONE || action == REWRITE_INTERNAL) && (found || passes) && len &&
            path[len - 1] != '/' && (found ? whole_dir : is_dir(&r, full))) {
            /* mod_dir's trailing slash comes after the rules, with the
             * query they made, whether or not they redirected inside. */
            if (!described)
                describe(&r, s, req, https);
            action = REWRITE_REDIRECT;
            status = 301;
            uri = slash_url(&r, path);
        }
        if (action == REWRITE_NONE)
            break;
        if (action != REWRITE_INTERNAL || ++passes > MAX_PASSES) {
            if (action == REWRITE_INTERNAL)
                vc_log(VC_LOG_WARN, "htaccess", "%s: more than %d internal redirects (.htaccess rewrite rules)", path,
                       MAX_PASSES);
            hand_over(req, &r, NULL, NULL, out);
            int rc = answer(f, s, req, action == REWRITE_INTERNAL ? REWRITE_STATUS : action, uri,
                            action == REWRITE_INTERNAL ? 500 : status);
            rewrite_release(&r);
            return rc;
        }
        prev_uri = r.uri;
        prev_args = r.args;
        const char *q = strchr(uri, '?');
        size_t ulen = q ? (size_t)(q - uri) : strlen(uri);
        r.args = q ? rewrite_strdup(&r, q + 1) : NULL;
        size_t decoded;
        int bad = rewrite_decode_path(uri, ulen, path, sizeof(path), &decoded);
        if (bad || rs->root_len + decoded + 1 >= sizeof(full)) {
            rewrite_release(&r);
            return answer(f, s, req, REWRITE_STATUS, NULL, bad ? bad : 400);
        }
        redirect_internally(&r);
    }
    if (chain.php)
        php_settings(&chain, out);
    out->answers = chain.answers;
    for (size_t i = 0; i < chain.nfiles; i++) /* the nearest one's */
        if (htaccess_dir_index(chain.files[i], &out->index, &out->nindex))
            out->index_set = 1;
    if (passes || r.nenv || r.nvary || r.args != client_args) {
        if (passes) {
            rewritten++;
            out->path = h2o_strdup(&req->pool, path, SIZE_MAX);
        }
        out->query_set = r.args != client_args;
        if (r.args)
            out->query = h2o_strdup(&req->pool, r.args, SIZE_MAX);
        hand_over(req, &r, prev_uri, prev_args, out);
    }
    rewrite_release(&r);
    return 0;
}
