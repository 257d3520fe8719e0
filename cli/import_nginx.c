/*
 * vc import nginx: each `server` block of an nginx configuration becomes a
 * site (import_site.h), each directive a line of the report. What the
 * suite cannot express is said, never guessed: a server that closes
 * something the suite would open is reported as not converted.
 */
#include "import_nginx_internal.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int import_nginx_is(const conf_node_t *d, const char *name)
{
    return strcmp(d->name, name) == 0;
}

int import_nginx_any_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(s, *names) == 0)
            return 1;
    return 0;
}

/* Directives the suite does its own way: processes, logs, buffers, TLS
 * protocols, MIME types. */
int import_nginx_not_needed(const char *name)
{
    static const char *const own[] = {"user",
                                      "worker_processes",
                                      "worker_connections",
                                      "pid",
                                      "events",
                                      "error_log",
                                      "access_log",
                                      "sendfile",
                                      "tcp_nopush",
                                      "tcp_nodelay",
                                      "types",
                                      "default_type",
                                      "types_hash_max_size",
                                      "server_tokens",
                                      "keepalive_timeout",
                                      "include",
                                      "charset",
                                      "log_not_found",
                                      "http2",
                                      "ssl_protocols",
                                      "ssl_ciphers",
                                      "ssl_prefer_server_ciphers",
                                      "ssl_session_cache",
                                      "ssl_session_timeout",
                                      "ssl_session_tickets",
                                      "ssl_dhparam",
                                      "ssl_stapling",
                                      "ssl_stapling_verify",
                                      "gzip_vary",
                                      "gzip_proxied",
                                      "gzip_comp_level",
                                      "gzip_buffers",
                                      "gzip_http_version",
                                      "gzip_types",
                                      "gzip_min_length",
                                      "log_format",
                                      "server_names_hash_bucket_size",
                                      "multi_accept",
                                      "client_body_timeout",
                                      "send_timeout",
                                      "client_header_timeout",
                                      "reset_timedout_connection",
                                      NULL};
    return import_nginx_any_of(name, own) || strncmp(name, "fastcgi_", 8) == 0;
}

void import_nginx_not_converted(walk_t *w, const conf_node_t *d, const char *why)
{
    import_note(w->im, d->file, d->line, IMPORT_NOT_CONVERTED, "%s%s%s%s", d->name, d->nargs ? " " : "",
                d->nargs ? d->args[0] : "", why);
}

/* "80", "[::]:443", "127.0.0.1:8080": the address and port as the suite
 * writes them (":80" for any address). */
static char *listen_addr(const char *a)
{
    const char *colon = strrchr(a, ':');
    if (strncmp(a, "unix:", 5) == 0)
        return NULL;
    if (colon == NULL)
        return strspn(a, "0123456789") == strlen(a) ? vc_asprintf(":%s", a) : NULL;
    if (strncmp(a, "[::]:", 5) == 0 || strncmp(a, "*:", 2) == 0 || strncmp(a, "0.0.0.0:", 8) == 0)
        return vc_asprintf("%s", colon);
    return vc_strdup(a);
}

static void listen_on(walk_t *w, import_site_t *s, pending_t *p, const conf_node_t *d)
{
    char *addr = d->nargs ? listen_addr(d->args[0]) : NULL;
    if (addr == NULL) {
        import_nginx_not_converted(w, d, ": not a port or an address and port");
        return;
    }
    int tls = 0, dflt = 0;
    for (size_t i = 1; i < d->nargs; i++) {
        tls |= strcmp(d->args[i], "ssl") == 0;
        dflt |= strcmp(d->args[i], "default_server") == 0 || strcmp(d->args[i], "default") == 0;
    }
    import_list_add(tls ? &w->im->tls_listen : &w->im->listen, addr);
    if (s) {
        s->tls |= tls;
        s->plain |= !tls;
        s->is_default |= dflt;
    } else {
        p->tls |= tls;
        p->plain |= !tls;
    }
    import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "listen %s%s%s → %s (conf-available/imported-nginx.conf)",
                d->args[0], tls ? " ssl" : "", dflt ? " default_server" : "", tls ? "tls_listen" : "listen");
    free(addr);
}

static void server_name(walk_t *w, import_site_t *s, const conf_node_t *d)
{
    for (size_t i = 0; i < d->nargs; i++) {
        const char *n = d->args[i];
        if (strcmp(n, "_") == 0 || !*n)
            continue;
        if (n[0] == '~') {
            import_note(w->im, d->file, d->line, IMPORT_NOT_CONVERTED,
                        "server_name %s: a regular expression (the suite matches names and *.wildcards)", n);
        } else if (n[0] == '.') { /* ".example.com": the name and every name below it */
            import_list_add(&s->hosts, n + 1);
            char *star = vc_asprintf("*%s", n);
            import_list_add(&s->hosts, star);
            free(star);
        } else {
            import_list_add(&s->hosts, n);
        }
    }
    import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "server_name → hosts");
}

/* nginx's `expires` as a duration the suite reads, or NULL. */
char *import_nginx_expires(const char *v)
{
    if (strcmp(v, "max") == 0)
        return vc_strdup("3650d");
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || n < 0)
        return NULL;
    if (strcmp(end, "y") == 0)
        return vc_asprintf("%ldd", n * 365);
    if (strcmp(end, "M") == 0)
        return vc_asprintf("%ldd", n * 30);
    if (strcmp(end, "w") == 0)
        return vc_asprintf("%ldd", n * 7);
    if (!*end || strcmp(end, "s") == 0 || strcmp(end, "m") == 0 || strcmp(end, "h") == 0 || strcmp(end, "d") == 0)
        return vc_asprintf("%ld%s", n, *end ? end : "s");
    return NULL;
}

static void server_directive(walk_t *w, import_site_t *s, const conf_node_t *d)
{
    import_t *im = w->im;
    if (import_nginx_is(d, "server_name")) {
        server_name(w, s, d);
    } else if (import_nginx_is(d, "listen")) {
        listen_on(w, s, NULL, d);
    } else if (import_nginx_is(d, "root") && d->nargs == 1 && !strchr(d->args[0], '$')) {
        free(s->root);
        s->root = vc_strdup(d->args[0]);
        import_note(im, d->file, d->line, IMPORT_CONVERTED, "root → root");
    } else if (import_nginx_is(d, "index")) {
        static const char *const known[] = {"index.php", "index.html", "index.htm", NULL};
        int all_known = 1;
        for (size_t i = 0; i < d->nargs; i++)
            all_known &= import_nginx_any_of(d->args[i], known);
        import_note(im, d->file, d->line, all_known ? IMPORT_CONVERTED : IMPORT_NOT_CONVERTED,
                    "index: the front tries index.php, then index.html");
    } else if ((import_nginx_is(d, "ssl_certificate") || import_nginx_is(d, "ssl_certificate_key")) && d->nargs == 1) {
        char **into = import_nginx_is(d, "ssl_certificate") ? &s->tls_cert : &s->tls_key;
        free(*into);
        *into = vc_strdup(d->args[0]);
        import_note(im, d->file, d->line, IMPORT_CONVERTED, "%s → %s", d->name,
                    import_nginx_is(d, "ssl_certificate") ? "tls_cert" : "tls_key");
    } else if (import_nginx_is(d, "client_max_body_size") && d->nargs == 1) {
        int64_t v = vc_parse_size(d->args[0]);
        if (v < 0) {
            import_nginx_not_converted(w, d, ": not a size");
            return;
        }
        if (v > im->max_body)
            im->max_body = v;
        import_note(im, d->file, d->line, IMPORT_CONVERTED,
                    "client_max_body_size → front.max_body, for every site (the largest)");
    } else if (import_nginx_is(d, "gzip") && d->nargs == 1) {
        s->gzip = strcmp(d->args[0], "on") == 0;
        import_note(im, d->file, d->line, IMPORT_CONVERTED, "gzip → gzip");
    } else if (import_nginx_is(d, "error_page")) {
        import_nginx_error_page(w, s, d);
    } else if (import_nginx_is(d, "location")) {
        import_nginx_location(w, s, d);
    } else if (import_nginx_not_needed(d->name)) {
        import_note(im, d->file, d->line, IMPORT_NOT_NEEDED, "%s: the suite's own", d->name);
    } else {
        import_nginx_not_converted(w, d, "");
    }
}

static void server(walk_t *w, const conf_node_t *srv)
{
    const conf_node_t *ret = conf_tree_find(srv, "return");
    if (ret && !conf_tree_find(srv, "location") && !conf_tree_find(srv, "root")) {
        /* Only a redirect: applied once every site is known. */
        w->redirects = vc_realloc(w->redirects, (w->nredirects + 1) * sizeof(*w->redirects));
        pending_t *p = &w->redirects[w->nredirects++];
        memset(p, 0, sizeof(*p));
        p->srv = srv;
        p->ret = ret;
        for (size_t i = 0; i < srv->nkids; i++)
            if (import_nginx_is(&srv->kids[i], "listen"))
                listen_on(w, NULL, p, &srv->kids[i]);
        return;
    }
    import_site_t *s = import_site_new(w->im, srv->file, srv->line);
    for (size_t i = 0; i < srv->nkids; i++)
        server_directive(w, s, &srv->kids[i]);
    if (s->gzip < 0)
        s->gzip = w->http_gzip;
    const conf_node_t *index = conf_tree_find(srv, "index");
    int index_php = w->http_index_php;
    for (size_t i = 0; index && i < index->nargs; i++)
        index_php |= strcmp(index->args[i], "index.php") == 0;
    if (s->php && !index_php)
        import_note(w->im, srv->file, srv->line, IMPORT_NOT_CONVERTED,
                    "server: no `index index.php`, so nginx answers a directory with its index.html or 403; the "
                    "suite runs its index.php");
    if (!s->php && s->root)
        import_note(w->im, srv->file, srv->line, IMPORT_NOT_CONVERTED,
                    "server: no location passes scripts to PHP, so nginx sends .php files as they are; the "
                    "suite runs them (review, or give the site an entry_scripts list)");
}

static void http(walk_t *w, const conf_node_t *h)
{
    for (size_t i = 0; i < h->nkids; i++) {
        const conf_node_t *d = &h->kids[i];
        if (import_nginx_is(d, "gzip") && d->nargs == 1) {
            w->http_gzip = strcmp(d->args[0], "on") == 0;
            import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "gzip → each site's gzip");
        } else if (import_nginx_is(d, "client_max_body_size") && d->nargs == 1 && vc_parse_size(d->args[0]) >= 0) {
            if (vc_parse_size(d->args[0]) > w->im->max_body)
                w->im->max_body = vc_parse_size(d->args[0]);
            import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "client_max_body_size → front.max_body");
        } else if (import_nginx_is(d, "index")) {
            for (size_t k = 0; k < d->nargs; k++)
                w->http_index_php |= strcmp(d->args[k], "index.php") == 0;
            import_note(w->im, d->file, d->line, IMPORT_CONVERTED, "index: the front tries index.php, then index.html");
        } else if (!import_nginx_is(d, "server")) {
            if (import_nginx_not_needed(d->name))
                import_note(w->im, d->file, d->line, IMPORT_NOT_NEEDED, "%s: the suite's own", d->name);
            else
                import_nginx_not_converted(w, d, "");
        }
    }
    for (size_t i = 0; i < h->nkids; i++)
        if (import_nginx_is(&h->kids[i], "server"))
            server(w, &h->kids[i]);
}

int import_nginx(import_t *im, const char *path, char *err, size_t errlen)
{
    conf_tree_t *conf = nginx_conf_load(path, err, errlen);
    if (conf == NULL)
        return -1;
    import_nginx_tree(im, conf);
    conf_tree_free(&conf);
    return 0;
}

void import_nginx_tree(import_t *im, const conf_tree_t *conf)
{
    walk_t w = {.im = im, .http_gzip = -1};
    for (size_t i = 0; i < conf->top.nkids; i++) {
        const conf_node_t *d = &conf->top.kids[i];
        if (import_nginx_is(d, "http"))
            http(&w, d);
        else if (import_nginx_not_needed(d->name))
            import_note(im, d->file, d->line, IMPORT_NOT_NEEDED, "%s: the suite's own", d->name);
        else
            import_nginx_not_converted(&w, d, "");
    }
    for (size_t i = 0; i < w.nredirects; i++)
        import_nginx_redirect(&w, &w.redirects[i]);
    free(w.redirects);
}
