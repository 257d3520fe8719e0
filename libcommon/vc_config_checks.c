/*
 * Checks across settings that a user could get wrong without any one
 * value being malformed: they refuse (vc_config_fail) or warn
 * (vc_config_warn) with the file and line of the setting to change.
 */
#include "vc_cache.h"
#include "vc_config_internal.h"
#include "vc_realtime.h"
#include "vc_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void vc_config_warn(struct ctx *c, vc_config_t *cfg, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cfg->warnings = vc_realloc(cfg->warnings, (cfg->nwarnings + 1) * sizeof(char *));
    cfg->warnings[cfg->nwarnings++] =
        line > 0 ? vc_asprintf("%s:%d: %s", c->file, line, msg) : vc_asprintf("%s: %s", c->file, msg);
}

/* Whether a tcp:// endpoint's host is a loopback address. */
static int tcp_on_loopback(const char *uri)
{
    const char *h = uri + 6;
    return strncmp(h, "127.", 4) == 0 || strncmp(h, "localhost:", 10) == 0 || strncmp(h, "[::1]:", 6) == 0;
}

/* A request link over TCP takes requests for PHP from whoever connects,
 * unless the link key (vc_link_auth.h) is asked for: off loopback that is
 * an open door, on loopback every local user's. */
int vc_config_check_link_keys(struct ctx *c, vc_config_t *cfg)
{
    if (cfg->link_key && *cfg->link_key)
        return 0;
    for (size_t i = 0; i < cfg->nendpoints; i++) {
        const vc_endpoint_override_t *e = &cfg->endpoints[i];
        if (strncmp(e->name, "php", 3) != 0 || strncmp(e->uri, "tcp://", 6) != 0)
            continue;
        struct ctx at = {c->err, c->errlen, e->origin};
        if (!tcp_on_loopback(e->uri))
            return vc_config_fail(&at, 0,
                                  "endpoints.%s is \"%s\" without link_key: any host that reaches the port could "
                                  "send requests to PHP; set link_key (openssl rand -hex 32) for the fronts and the "
                                  "pool",
                                  e->name, e->uri);
        vc_config_warn(&at, cfg, 0,
                       "endpoints.%s is \"%s\" without link_key: every local user can send requests to PHP; set "
                       "link_key (openssl rand -hex 32), or use the default Unix socket",
                       e->name, e->uri);
    }
    return 0;
}

/* A shared secret a guess could find is no secret: the length of a
 * Pusher secret (20) is more than this. */
#define SECRET_MIN 16
/* A Socket.IO namespace's length, as vc-front reads one (SIO_NSP_MAX). */
#define SIO_NSP_MAX_CONFIG 256

/* "*", or "http[s]://HOST[:PORT]" with no path: what a browser sends. */
static int is_origin(const char *o)
{
    if (strcmp(o, "*") == 0)
        return 1;
    const char *h = strncmp(o, "https://", 8) == 0 ? o + 8 : strncmp(o, "http://", 7) == 0 ? o + 7 : NULL;
    return h && *h && *h != ':' && strpbrk(h, "/?#@ ") == NULL && h[strlen(h) - 1] != ':';
}

/* A site's Socket.IO path ("/socket.io/": a path of its own, as socket.io
 * matches it) and namespaces ("/", "/chat"). */
static int check_socketio(struct ctx *c, const vc_site_t *s)
{
    const char *p = s->socketio_path;
    if (p && (p[0] != '/' || strlen(p) < 2 || p[strlen(p) - 1] != '/' || strlen(p) > 200 || strpbrk(p, "?#% \t")))
        return vc_config_fail(c, s->line,
                              "site \"%s\": socketio.path: \"%s\" is not a path that starts and ends with \"/\" "
                              "(\"/socket.io/\")",
                              s->name, p);
    const char *h = s->socketio_handler;
    /* "socket.php" is "/socket.php": a URL path of the site either way. */
    if (h && (p == NULL || strlen(h) < 5 || strlen(h) > 200 || strcmp(h + strlen(h) - 4, ".php") != 0 || h[0] == '.' ||
              strstr(h, "/.") || strstr(h, "//") || strpbrk(h, "?#% \t\\")))
        return vc_config_fail(c, s->line,
                              "site \"%s\": socketio.handler: \"%s\" is not a PHP script's path in the site "
                              "(\"/socket.php\": no part starting with a dot, ending in .php; with socketio.path)",
                              s->name, h);
    for (size_t k = 0; k < s->nsocketio_namespaces; k++) {
        const char *n = s->socketio_namespaces[k];
        if (n[0] != '/' || strlen(n) > SIO_NSP_MAX_CONFIG || strpbrk(n, ", \t?#"))
            return vc_config_fail(c, s->line,
                                  "site \"%s\": socketio.namespaces: \"%s\" is not a namespace (\"/\" or \"/chat\": a "
                                  "slash, then no comma or space, 256 characters at most)",
                                  s->name, n);
    }
    return 0;
}

int vc_config_check_realtime(struct ctx *c, vc_config_t *cfg)
{
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        c->file = s->source;
        if (check_socketio(c, s) < 0)
            return -1;
        for (size_t r = 0; r < s->nrealtime_origins; r++)
            if (!is_origin(s->realtime_origins[r]))
                return vc_config_fail(
                    c, s->line,
                    "site \"%s\": realtime_origins: \"%s\" is not an origin (\"https://HOST[:PORT]\", "
                    "as a browser sends it, or \"*\")",
                    s->name, s->realtime_origins[r]);
        for (size_t r = 0; r < s->nrealtime_apps; r++) {
            vc_rt_app_t a;
            char why[256];
            if (vc_rt_app_parse(s->realtime_apps[r], &a, why, sizeof(why)) < 0)
                continue; /* said by vc_sites_validate */
            if (strlen(a.secret) < SECRET_MIN)
                return vc_config_fail(c, s->line,
                                      "site \"%s\": realtime app \"%s\": its secret is %zu characters: give at least "
                                      "%d (openssl rand -hex 20)",
                                      s->name, a.id, strlen(a.secret), SECRET_MIN);
            /* An app is found by its id (the HTTP API) and its key (a
             * connection): two apps with one of them would be one. */
            for (size_t j = 0; j <= i; j++) {
                const vc_site_t *o = &cfg->sites[j];
                for (size_t q = 0; q < (j == i ? r : o->nrealtime_apps); q++) {
                    vc_rt_app_t b;
                    if (vc_rt_app_parse(o->realtime_apps[q], &b, why, sizeof(why)) < 0)
                        continue;
                    if (strcmp(a.id, b.id) == 0 || strcmp(a.key, b.key) == 0)
                        return vc_config_fail(c, s->line,
                                              "site \"%s\": realtime app \"%s\" has the %s of an app of site \"%s\" "
                                              "(%s:%d): each app needs its own id and key",
                                              s->name, a.id, strcmp(a.id, b.id) == 0 ? "id" : "key", o->name, o->source,
                                              o->line);
                }
            }
        }
    }
    return 0;
}

int vc_config_check_cache(struct ctx *c, vc_config_t *cfg)
{
    const cache_settings_t *cs = vc_cache_settings_of(cfg);
    c->file = "configuration";
    if (cs->purge_token && *cs->purge_token && strlen(cs->purge_token) < SECRET_MIN)
        return vc_config_fail(c, 0, "cache.purge_token is %zu characters: give at least %d (openssl rand -hex 20)",
                              strlen(cs->purge_token), SECRET_MIN);
    for (size_t i = 0; i < cs->nstrip_params; i++)
        if (strcmp(cs->strip_params[i], "*") == 0)
            vc_config_warn(c, cfg, 0,
                           "cache.strip_params has \"*\": every query parameter is left out of the key, so "
                           "/search?q=a and /search?q=b are one page");
    if (cs->nsession_cookies == 0)
        vc_config_warn(c, cfg, 0,
                       "cache.session_cookies is empty: a signed-in visitor's pages may be stored and served to "
                       "others (the default lists the common frameworks' session cookies)");
    if (cs->lock_timeout_ms == 0)
        vc_config_warn(c, cfg, 0,
                       "cache.lock_timeout is 0: every miss goes to PHP at once, however many wait for the same "
                       "page (a stampede on a popular page that expires)");
    return 0;
}
