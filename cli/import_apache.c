/*
 * vc import apache: each <VirtualHost> of an Apache httpd configuration
 * becomes a site (import_site.h), each directive a line of the report.
 * What the suite cannot express is said, never guessed: `AllowOverride`
 * other than None (the site's .htaccess files, of which the suite applies
 * the access and mod_rewrite rules only) and mod_rewrite rules of the
 * server's configuration are reported as not converted.
 */
#include "apache_conf.h"
#include "import_site.h"
#include "vc_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct awalk {
    import_t *im;
    int php;                   /* a global FilesMatch hands .php files to PHP (php8.2-fpm.conf) */
    const conf_node_t **moves; /* virtual hosts that only redirect */
    size_t nmoves;
} awalk_t;

static int is(const conf_node_t *d, const char *name)
{
    return strcasecmp(d->name, name) == 0;
}

static int any_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcasecmp(s, *names) == 0)
            return 1;
    return 0;
}

static int not_needed(const char *name)
{
    static const char *const own[] = {"LoadModule",
                                      "ServerRoot",
                                      "Mutex",
                                      "PidFile",
                                      "Timeout",
                                      "KeepAlive",
                                      "MaxKeepAliveRequests",
                                      "KeepAliveTimeout",
                                      "User",
                                      "Group",
                                      "HostnameLookups",
                                      "ErrorLog",
                                      "LogLevel",
                                      "LogFormat",
                                      "CustomLog",
                                      "AccessFileName",
                                      "ServerTokens",
                                      "ServerSignature",
                                      "TraceEnable",
                                      "Define",
                                      "ServerAdmin",
                                      "DefaultRuntimeDir",
                                      "TypesConfig",
                                      "AddType",
                                      "AddLanguage",
                                      "AddCharset",
                                      "AddDefaultCharset",
                                      "SSLProtocol",
                                      "SSLCipherSuite",
                                      "SSLHonorCipherOrder",
                                      "SSLSessionCache",
                                      "SSLSessionCacheTimeout",
                                      "SSLRandomSeed",
                                      "SSLPassPhraseDialog",
                                      "SSLStaplingCache",
                                      "SSLUseStapling",
                                      "SSLCompression",
                                      "SSLSessionTickets",
                                      "StartServers",
                                      "MinSpareThreads",
                                      "MaxSpareThreads",
                                      "ThreadLimit",
                                      "ThreadsPerChild",
                                      "MaxRequestWorkers",
                                      "MaxConnectionsPerChild",
                                      "MinSpareServers",
                                      "MaxSpareServers",
                                      "EnableSendfile",
                                      "Protocols",
                                      "ServerName",
                                      "Options",
                                      "Require",
                                      "Order",
                                      "Allow",
                                      "Satisfy",
                                      "SetEnvIf",
                                      "BrowserMatch",
                                      "ScriptAlias",
                                      "IndexOptions",
                                      "AddIconByEncoding",
                                      "AddIconByType",
                                      "AddIcon",
                                      "DefaultIcon",
                                      "ReadmeName",
                                      "HeaderName",
                                      "IndexIgnore",
                                      "LanguagePriority",
                                      "ForceLanguagePriority",
                                      "AddHandler",
                                      "Action",
                                      "FileETag",
                                      "DirectoryIndex",
                                      "SSLEngine",
                                      "AddOutputFilterByType",
                                      "AddOutputFilter",
                                      "RemoveType",
                                      "RequestReadTimeout",
                                      "ExtendedStatus",
                                      "ProxyStatus",
                                      NULL};
    return any_of(name, own);
}

static void note(awalk_t *w, const conf_node_t *d, import_kind_t k, const char *what)
{
    import_note(w->im, d->file, d->line, k, "%s%s%s: %s", d->name, d->nargs ? " " : "", d->nargs ? d->args[0] : "",
                what);
}

/* A FilesMatch or Files that hands scripts to PHP (mod_proxy_fcgi, mod_php). */
static int php_handler(const conf_node_t *d)
{
    if (!(is(d, "FilesMatch") || is(d, "Files")) || d->nargs != 1 || !strstr(d->args[0], "ph"))
        return 0;
    const conf_node_t *h = conf_tree_find_nocase(d, "SetHandler");
    return h && h->nargs == 1 &&
           (strncmp(h->args[0], "proxy:", 6) == 0 || strcmp(h->args[0], "application/x-httpd-php") == 0);
}

static void listen_on(awalk_t *w, const conf_node_t *d)
{
    const char *a = d->nargs ? d->args[0] : "";
    const char *colon = strrchr(a, ':');
    const char *port = colon ? colon + 1 : a;
    int tls = (d->nargs > 1 && !strcasecmp(d->args[1], "https")) || strcmp(port, "443") == 0;
    char *addr = colon && a[0] != '[' && strncmp(a, "0.0.0.0:", 8) ? vc_strdup(a) : vc_asprintf(":%s", port);
    import_list_add(tls ? &w->im->tls_listen : &w->im->listen, addr);
    free(addr);
    note(w, d, IMPORT_CONVERTED,
         tls ? "→ tls_listen (conf-available/imported-apache.conf)" : "→ listen (conf-available/imported-apache.conf)");
}

/* <Directory DIR> or <Location /PATH> inside a virtual host. */
static void section(awalk_t *w, import_site_t *s, const conf_node_t *d)
{
    const char *path = d->nargs ? d->args[0] : "";
    const conf_node_t *req = conf_tree_find_nocase(d, "Require"), *over = conf_tree_find_nocase(d, "AllowOverride");
    int denied = req && req->nargs == 2 && !strcasecmp(req->args[0], "all") && !strcasecmp(req->args[1], "denied");
    if (over && over->nargs && strcasecmp(over->args[0], "None") != 0) {
        note(w, over, IMPORT_NOT_CONVERTED,
             "the site's .htaccess files apply under Apache; the suite applies their access and mod_rewrite rules, "
             "not their other directives (each logged with its file and line): review them");
    }
    if (conf_tree_find_nocase(d, "FallbackResource")) {
        s->front_controller = 1;
        note(w, d, IMPORT_CONVERTED,
             "FallbackResource → front_controller = true (a missing .php file is 404 here; Apache runs the fallback)");
    }
    char *prefix = NULL;
    if (is(d, "Location") && path[0] == '/')
        prefix = vc_strdup(path);
    else if (is(d, "Directory") && s->root && strncmp(path, s->root, strlen(s->root)) == 0 &&
             path[strlen(s->root)] == '/')
        prefix = vc_strdup(path + strlen(s->root));
    if (denied && prefix && strcmp(prefix, "/") != 0) {
        import_list_add(&s->deny, prefix);
        note(w, d, IMPORT_CONVERTED, "Require all denied → deny (403)");
    } else if (denied) {
        note(w, d, IMPORT_NOT_CONVERTED, "denies what the suite would serve: review");
    }
    free(prefix);
    for (size_t i = 0; i < d->nkids; i++) {
        const conf_node_t *k = &d->kids[i];
        if (!is(k, "Require") && !is(k, "AllowOverride") && !is(k, "FallbackResource") && !not_needed(k->name))
            note(w, k, IMPORT_NOT_CONVERTED, "(inside the section above)");
    }
}

static void vhost_directive(awalk_t *w, import_site_t *s, const conf_node_t *d)
{
    if (is(d, "ServerName") || is(d, "ServerAlias")) {
        for (size_t i = 0; i < d->nargs; i++)
            import_list_add(&s->hosts, d->args[i]);
        note(w, d, IMPORT_CONVERTED, "→ hosts");
    } else if (is(d, "DocumentRoot") && d->nargs == 1) {
        free(s->root);
        s->root = vc_strdup(d->args[0]);
        size_t n = strlen(s->root);
        while (n > 1 && s->root[n - 1] == '/')
            s->root[--n] = '\0';
        note(w, d, IMPORT_CONVERTED, "→ root");
    } else if ((is(d, "SSLCertificateFile") || is(d, "SSLCertificateKeyFile")) && d->nargs == 1) {
        char **into = is(d, "SSLCertificateFile") ? &s->tls_cert : &s->tls_key;
        free(*into);
        *into = vc_strdup(d->args[0]);
        note(w, d, IMPORT_CONVERTED, is(d, "SSLCertificateFile") ? "→ tls_cert" : "→ tls_key");
    } else if (is(d, "LimitRequestBody") && d->nargs == 1 && vc_parse_size(d->args[0]) >= 0) {
        if (vc_parse_size(d->args[0]) > w->im->max_body)
            w->im->max_body = vc_parse_size(d->args[0]);
        note(w, d, IMPORT_CONVERTED, "→ front.max_body, for every site (the largest)");
    } else if (is(d, "ErrorDocument") && d->nargs == 2 && d->args[1][0] == '/' && !strstr(d->args[1], ".php")) {
        char *e = vc_asprintf("%s %s", d->args[0], d->args[1]);
        import_list_add(&s->error_pages, e);
        free(e);
        note(w, d, IMPORT_CONVERTED, "→ error_pages (the front's own errors)");
    } else if (is(d, "Redirect") && d->nargs >= 2) {
        const char *code = d->nargs == 3 ? d->args[0] : "302", *from = d->args[d->nargs - 2];
        int c = !strcasecmp(code, "permanent") ? 301 : !strcasecmp(code, "temp") ? 302 : atoi(code);
        if (c != 301 && c != 302 && c != 307 && c != 308) {
            note(w, d, IMPORT_NOT_CONVERTED, "a redirect the suite has no setting for");
            return;
        }
        char *r = vc_asprintf("%s %s %d", from, d->args[d->nargs - 1], c);
        import_list_add(&s->redirects, r);
        free(r);
        note(w, d, IMPORT_CONVERTED, "→ redirects, for the exact path (Apache also redirects what is below it)");
    } else if (php_handler(d)) {
        s->php = 1;
        note(w, d, IMPORT_CONVERTED, "SetHandler → PHP runs .php files");
    } else if (is(d, "Directory") || is(d, "Location")) {
        section(w, s, d);
    } else if (is(d, "FilesMatch") && d->nargs == 1 && strncmp(d->args[0], "^\\.ht", 5) == 0) {
        note(w, d, IMPORT_NOT_NEEDED, "dot files: the suite answers 404 for them already");
    } else if (!strncasecmp(d->name, "Rewrite", 7)) {
        note(w, d, IMPORT_NOT_CONVERTED, "mod_rewrite: the suite does not run these rules");
    } else if (not_needed(d->name)) {
        note(w, d, IMPORT_NOT_NEEDED, "the suite's own");
    } else {
        note(w, d, IMPORT_NOT_CONVERTED, "no setting for it");
    }
}

static void vhost(awalk_t *w, const conf_node_t *v)
{
    const conf_node_t *redirect = conf_tree_find_nocase(v, "Redirect");
    if (redirect && !conf_tree_find_nocase(v, "DocumentRoot")) {
        w->moves = vc_realloc(w->moves, (w->nmoves + 1) * sizeof(*w->moves));
        w->moves[w->nmoves++] = v;
        return;
    }
    import_site_t *s = import_site_new(w->im, v->file, v->line);
    s->php = w->php;
    const char *port = v->nargs ? strrchr(v->args[0], ':') : NULL;
    int tls = port && strcmp(port, ":443") == 0;
    s->tls = tls || conf_tree_find_nocase(v, "SSLEngine");
    s->plain = !s->tls;
    s->is_default = v->nargs && !strncmp(v->args[0], "_default_", 9);
    for (size_t i = 0; i < v->nkids; i++) /* the root first: sections are read against it */
        if (is(&v->kids[i], "DocumentRoot"))
            vhost_directive(w, s, &v->kids[i]);
    for (size_t i = 0; i < v->nkids; i++)
        if (!is(&v->kids[i], "DocumentRoot"))
            vhost_directive(w, s, &v->kids[i]);
    /* Apache answers a missing path with 404 unless something routes it:
     * FallbackResource, or the site's own .htaccess (WordPress's,
     * Laravel's), whose rewrite rules the suite applies as Apache does. */
    if (s->front_controller < 0)
        s->front_controller = 0;
    if (!s->php && s->root)
        import_note(w->im, v->file, v->line, IMPORT_NOT_CONVERTED,
                    "VirtualHost: nothing hands .php files to PHP, so Apache sends them as they are; the suite runs "
                    "them (review, or give the site an entry_scripts list)");
}

/* <VirtualHost *:80> ServerName a.example; Redirect permanent / https://a.example/ </VirtualHost> */
static void move(awalk_t *w, const conf_node_t *v)
{
    const conf_node_t *r = conf_tree_find_nocase(v, "Redirect"), *name = conf_tree_find_nocase(v, "ServerName");
    if (r->nargs < 2) {
        note(w, r, IMPORT_NOT_CONVERTED, "a redirect without its path and target");
        return;
    }
    const char *from = r->args[r->nargs - 2], *to = r->args[r->nargs - 1];
    const char *host = strstr(to, "://");
    import_site_t *target = NULL;
    char h[256] = "";
    if (strcmp(from, "/") == 0 && host && name && name->nargs == 1) {
        host += 3;
        size_t n = strcspn(host, "/:");
        if (n < sizeof(h) && (host[n] == '\0' || strcmp(host + n, "/") == 0)) {
            memcpy(h, host, n);
            h[n] = '\0';
            target = import_site_for(w->im, h);
        }
    }
    if (target == NULL) {
        note(w, r, IMPORT_NOT_CONVERTED, "a redirect the suite has no setting for");
        return;
    }
    if (strcmp(h, name->args[0]) != 0) {
        import_list_add(&target->hosts, name->args[0]);
        free(target->canonical_host);
        target->canonical_host = vc_strdup(h);
    }
    if (strncmp(to, "https://", 8) == 0 && target->tls)
        target->https_redirect = 1;
    note(w, r, IMPORT_CONVERTED,
         strcmp(h, name->args[0]) ? "its name joins the target's site, with canonical_host"
                                  : "https_redirect on the site of the same name");
}

static void top(awalk_t *w, const conf_node_t *d)
{
    if (is(d, "VirtualHost")) {
        vhost(w, d);
    } else if (is(d, "IfModule") || is(d, "IfDefine") || is(d, "IfVersion")) {
        if (d->nargs && d->args[0][0] == '!') /* read as if the module were loaded, never as if not */
            return;
        for (size_t i = 0; i < d->nkids; i++)
            top(w, &d->kids[i]);
    } else if (is(d, "Listen")) {
        listen_on(w, d);
    } else if (php_handler(d)) {
        w->php = 1;
        note(w, d, IMPORT_CONVERTED, "SetHandler → PHP runs .php files in every site");
    } else if (is(d, "Directory") || is(d, "FilesMatch") || is(d, "Files") || is(d, "Location")) {
        const conf_node_t *over = conf_tree_find_nocase(d, "AllowOverride");
        if (over && over->nargs && strcasecmp(over->args[0], "None") != 0)
            note(w, over, IMPORT_NOT_CONVERTED,
                 "the sites' .htaccess files apply under Apache; the suite applies their access and mod_rewrite rules, "
                 "not their other directives: review them");
        else
            note(w, d, IMPORT_NOT_NEEDED, "the suite serves each site's root only, and no dot file");
    } else if (not_needed(d->name)) {
        note(w, d, IMPORT_NOT_NEEDED, "the suite's own");
    } else {
        note(w, d, IMPORT_NOT_CONVERTED, "no setting for it");
    }
}

int import_apache(import_t *im, const char *path, char *err, size_t errlen)
{
    conf_tree_t *conf = apache_conf_load(path, err, errlen);
    if (conf == NULL)
        return -1;
    import_apache_tree(im, conf);
    conf_tree_free(&conf);
    return 0;
}

void import_apache_tree(import_t *im, const conf_tree_t *conf)
{
    awalk_t w = {.im = im};
    /* A global PHP handler counts for every virtual host, wherever it is. */
    for (size_t i = 0; i < conf->top.nkids; i++) {
        const conf_node_t *d = &conf->top.kids[i];
        if (php_handler(d))
            w.php = 1;
        for (size_t k = 0; (is(d, "IfModule") && d->args && d->nargs && d->args[0][0] != '!') && k < d->nkids; k++)
            w.php |= php_handler(&d->kids[k]);
    }
    for (size_t i = 0; i < conf->top.nkids; i++)
        top(&w, &conf->top.kids[i]);
    for (size_t i = 0; i < w.nmoves; i++)
        move(&w, w.moves[i]);
    free(w.moves);
}
