/*
 * The sites of a configuration: each checked (file and line of the site
 * in errors), and the one a request's host or a handshake's name selects
 * (exact names first, then the longest wildcard, then the default site).
 */
#include "vc_cache.h"
#include "vc_config.h"
#include "vc_config_internal.h"
#include "vc_realtime.h"
#include "vc_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int roots_elsewhere;

void vc_config_roots_elsewhere(void)
{
    roots_elsewhere = 1;
}

/* Whether one of the paths a and b is the other or holds it. */
static int nested(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;
    return strncmp(a, b, n) == 0 && (la == lb || (la < lb ? b[la] : a[lb]) == '/' || n == 1);
}

/* A directory the front may serve a file from on PHP's word (X-Accel-
 * Redirect, X-Sendfile): absolute, there, not "/" and never the suite's
 * own state (its keys, its LMDB), which the front can read and PHP must
 * not. A trailing '/' is dropped. */
static int check_handoff_dir(struct ctx *c, const vc_config_t *cfg, const vc_site_t *s, const char *what, char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    if (dir[0] != '/' || strstr(dir, "/../") || (n >= 3 && strcmp(dir + n - 3, "/..") == 0))
        return vc_config_fail(c, s->line, "site \"%s\": %s \"%s\" is not an absolute path", s->name, what, dir);
    if (strcmp(dir, "/") == 0 || (cfg->data_dir && nested(dir, cfg->data_dir)))
        return vc_config_fail(c, s->line, "site \"%s\": %s \"%s\" would open the suite's own files (%s) to PHP",
                              s->name, what, dir, cfg->data_dir ? cfg->data_dir : "/");
    if (!roots_elsewhere && !is_dir(dir))
        return vc_config_fail(c, s->line, "site \"%s\": %s \"%s\" is not a directory", s->name, what, dir);
    return 0;
}

/* site.internal_locations ("PREFIX DIR") and site.sendfile_paths. */
static int check_handoffs(struct ctx *c, const vc_config_t *cfg, vc_site_t *s)
{
    for (size_t i = 0; i < s->ninternal_locations; i++) {
        char *loc = s->internal_locations[i], *sp = strchr(loc, ' ');
        if (loc[0] != '/' || sp == NULL || strchr(sp + 1, ' ') || strstr(loc, "..") || sp == loc + 1)
            return vc_config_fail(c, s->line,
                                  "site \"%s\": internal location \"%s\" is not \"/PREFIX/ DIRECTORY\" (as nginx's "
                                  "\"location /PREFIX/ { internal; alias DIRECTORY/; }\")",
                                  s->name, loc);
        int rc = check_handoff_dir(c, cfg, s, "internal location's directory", sp + 1);
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < s->ndeny; i++)
        if (s->deny[i][0] != '/')
            return vc_config_fail(c, s->line, "site \"%s\": deny \"%s\" is not a path prefix like \"/private/\"",
                                  s->name, s->deny[i]);
    for (size_t i = 0; i < s->nsendfile_paths; i++) {
        int rc = check_handoff_dir(c, cfg, s, "sendfile path", s->sendfile_paths[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* A path inside a release: relative, no "..", no empty part. */
static int release_path_ok(const char *p)
{
    if (p[0] == '\0' || p[0] == '/')
        return 0;
    for (const char *part = p; part; part = strchr(part, '/') ? strchr(part, '/') + 1 : NULL) {
        size_t n = strcspn(part, "/");
        if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
    }
    return 1;
}

void vc_config_resolve_deploy_to(vc_site_t *s)
{
    size_t n = strlen(s->deploy_to);
    while (n > 1 && s->deploy_to[n - 1] == '/')
        s->deploy_to[--n] = '\0';
    char *real = realpath(s->deploy_to, NULL);
    if (real == NULL)
        return; /* made by `vc up`; checked where it is used */
    if (s->root && strncmp(s->root, s->deploy_to, n) == 0 && (s->root[n] == '/' || s->root[n] == '\0')) {
        char *root = vc_asprintf("%s%s", real, s->root + n);
        free(s->root);
        s->root = root;
    }
    free(s->deploy_to);
    s->deploy_to = real;
}

/* site.deploy_to and what goes with it (docs/deploys.md): the root is in
 * the current release, which need not exist before the first deploy. */
static int check_deploy(struct ctx *c, const vc_site_t *s, int *root_may_be_missing)
{
    *root_may_be_missing = 0;
    if (s->deploy_to == NULL) {
        if (s->nshared || s->health_check || s->ndeploy_exclude || s->deploy_quorum)
            return vc_config_fail(c, s->line, "site \"%s\": %s needs deploy_to", s->name,
                                  s->nshared         ? "shared"
                                  : s->health_check  ? "health_check"
                                  : s->deploy_quorum ? "deploy_quorum"
                                                     : "deploy_exclude");
        return 0;
    }
    if (s->health_check && (s->health_check[0] != '/' || strpbrk(s->health_check, " \t\r\n#")))
        return vc_config_fail(c, s->line, "site \"%s\": health_check \"%s\" is a path (\"/health\")", s->name,
                              s->health_check);
    size_t n = strlen(s->deploy_to);
    while (n > 1 && s->deploy_to[n - 1] == '/')
        n--;
    if (s->deploy_to[0] != '/' || n < 2)
        return vc_config_fail(c, s->line, "site \"%s\": deploy_to \"%s\" is not an absolute path below /", s->name,
                              s->deploy_to);
    if (strncmp(s->root, s->deploy_to, n) != 0 || strncmp(s->root + n, "/current", 8) != 0 ||
        (s->root[n + 8] != '\0' && s->root[n + 8] != '/'))
        return vc_config_fail(c, s->line,
                              "site \"%s\": with deploy_to \"%s\", root is in the current release: \"%.*s/current\" "
                              "or below it (\"%.*s/current/public\"), not \"%s\"",
                              s->name, s->deploy_to, (int)n, s->deploy_to, (int)n, s->deploy_to, s->root);
    for (size_t i = 0; i < s->nshared; i++)
        if (!release_path_ok(s->shared[i]))
            return vc_config_fail(c, s->line,
                                  "site \"%s\": shared \"%s\" is not a path inside a release (relative, no \"..\")",
                                  s->name, s->shared[i]);
    for (size_t i = 0; i < s->ndeploy_exclude; i++)
        if (s->deploy_exclude[i][0] == '\0' || s->deploy_exclude[i][0] == '/')
            return vc_config_fail(c, s->line,
                                  "site \"%s\": deploy_exclude \"%s\" is a pattern relative to the application "
                                  "(\".env\", \"tests/*\")",
                                  s->name, s->deploy_exclude[i]);
    *root_may_be_missing = 1;
    return 0;
}

int vc_sites_validate(struct ctx *c, vc_config_t *cfg)
{
    int ndefault = 0;
    for (size_t i = 0; i < cfg->nsites; i++) {
        vc_site_t *s = &cfg->sites[i];
        c->file = s->source;
        if (s->root == NULL)
            return vc_config_fail(c, s->line, "site \"%s\" has no root", s->name);
        if (s->root[0] != '/')
            return vc_config_fail(c, s->line, "site \"%s\": root \"%s\" is not an absolute path", s->name, s->root);
        int before_first_deploy = 0;
        if (check_deploy(c, s, &before_first_deploy) < 0)
            return -1;
        if (!roots_elsewhere && !before_first_deploy && !is_dir(s->root))
            return vc_config_fail(c, s->line, "site \"%s\": root \"%s\" is not a directory", s->name, s->root);
        if ((s->tls_cert == NULL) != (s->tls_key == NULL))
            return vc_config_fail(c, s->line, "site \"%s\": tls_cert and tls_key go together", s->name);
        if (vc_background_validate(c, s, !roots_elsewhere && !before_first_deploy) < 0)
            return -1;
        if (s->tls && strcmp(s->tls, "acme") != 0)
            return vc_config_fail(c, s->line, "site \"%s\": tls is \"acme\" or not set (tls_cert and tls_key)",
                                  s->name);
        if (s->tls && s->tls_cert)
            return vc_config_fail(c, s->line, "site \"%s\": tls = \"acme\" and tls_cert: one or the other", s->name);
        if (s->acme_challenge && strcmp(s->acme_challenge, "http-01") != 0 &&
            strcmp(s->acme_challenge, "tls-alpn-01") != 0 && strcmp(s->acme_challenge, "dns-01") != 0)
            return vc_config_fail(c, s->line,
                                  "site \"%s\": acme_challenge is \"http-01\", \"tls-alpn-01\" or \"dns-01\"", s->name);
        for (size_t h = 0; h < s->nhosts; h++) {
            const char *star = strchr(s->hosts[h], '*');
            if (star && (star != s->hosts[h] || s->hosts[h][1] != '.' || strchr(star + 1, '*') || !s->hosts[h][2]))
                return vc_config_fail(c, s->line,
                                      "site \"%s\": host \"%s\": a wildcard is a whole first label (\"*.example.com\")",
                                      s->name, s->hosts[h]);
            struct in_addr v4;
            if (s->tls &&
                (strchr(s->hosts[h], ':') || !strchr(s->hosts[h], '.') || inet_pton(AF_INET, s->hosts[h], &v4) == 1))
                return vc_config_fail(c, s->line,
                                      "site \"%s\": tls = \"acme\" needs host names a CA can check; \"%s\" is not one",
                                      s->name, s->hosts[h]);
            if (s->tls && star && (s->acme_challenge == NULL || strcmp(s->acme_challenge, "dns-01") != 0))
                return vc_config_fail(c, s->line, "site \"%s\": the wildcard \"%s\" needs acme_challenge = \"dns-01\"",
                                      s->name, s->hosts[h]);
        }
        if (s->acme_on_demand && !s->is_default)
            return vc_config_fail(c, s->line,
                                  "site \"%s\": acme_on_demand is for the default site (default = true), which "
                                  "serves the hosts no site names",
                                  s->name);
        if (s->tls && s->nhosts == 0)
            return vc_config_fail(c, s->line, "site \"%s\": tls = \"acme\" needs hosts", s->name);
        if (s->nhosts == 0 && !s->is_default)
            return vc_config_fail(c, s->line, "site \"%s\" has no hosts and is not the default", s->name);
        for (size_t h = 0; h < s->nhosts; h++) {
            for (char *p = s->hosts[h]; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            for (size_t j = 0; j < i; j++)
                for (size_t k = 0; k < cfg->sites[j].nhosts; k++)
                    if (strcmp(cfg->sites[j].hosts[k], s->hosts[h]) == 0)
                        return vc_config_fail(c, s->line, "host \"%s\" is already served by site \"%s\" (%s)",
                                              s->hosts[h], cfg->sites[j].name, cfg->sites[j].source);
        }
        for (size_t r = 0; r < s->nredirects; r++) {
            char from[1024], to[2048];
            int code = 301, n = sscanf(s->redirects[r], "%1023s %2047s %d", from, to, &code);
            if (n < 2 || from[0] != '/' || (code != 301 && code != 302 && code != 307 && code != 308))
                return vc_config_fail(c, s->line, "site \"%s\": redirect \"%s\" is not \"/FROM TO [301|302|307|308]\"",
                                      s->name, s->redirects[r]);
        }
        for (size_t r = 0; r < s->ncache_rules; r++) {
            vc_cache_rule_t rule;
            char why[512];
            if (vc_cache_rule_parse(s->cache_rules[r], &rule, why, sizeof(why)) < 0)
                return vc_config_fail(c, s->line, "site \"%s\": cache rule %s", s->name, why);
        }
        for (size_t r = 0; r < s->nrealtime_apps; r++) {
            vc_rt_app_t app;
            char why[512];
            if (vc_rt_app_parse(s->realtime_apps[r], &app, why, sizeof(why)) < 0)
                return vc_config_fail(c, s->line, "site \"%s\": realtime app %s", s->name, why);
        }
        for (size_t r = 0; r < s->nrealtime_webhooks; r++) {
            vc_rt_webhook_t hook;
            char why[512];
            if (vc_rt_webhook_parse(s->realtime_webhooks[r], &hook, why, sizeof(why)) < 0)
                return vc_config_fail(c, s->line, "site \"%s\": realtime webhook %s", s->name, why);
        }
        /* Matched against the script's path from the root, without its
         * first '/' (route.c): a leading one is dropped here. */
        for (size_t e = 0; e < s->nentry_scripts; e++) {
            char *p = s->entry_scripts[e];
            if (*p == '/')
                memmove(p, p + 1, strlen(p));
            if (!*p || strstr(p, "..") || strstr(p, "//"))
                return vc_config_fail(c, s->line,
                                      "site \"%s\": entry script \"%s\" is not a path from the root like "
                                      "\"index.php\" or \"wp-admin/*.php\"",
                                      s->name, s->entry_scripts[e]);
        }
        for (size_t e = 0; e < s->nerror_pages; e++) {
            int code = 0;
            char path[1024];
            if (sscanf(s->error_pages[e], "%d %1023s", &code, path) != 2 || code < 400 || code > 599)
                return vc_config_fail(c, s->line, "site \"%s\": error page \"%s\" is not \"CODE /path\"", s->name,
                                      s->error_pages[e]);
        }
        int rc = check_handoffs(c, cfg, s);
        if (rc < 0)
            return rc;
        if (s->is_default && ndefault++)
            return vc_config_fail(c, s->line, "site \"%s\" is a second default site", s->name);
    }
    return 0;
}

int vc_host_match(const char *pattern, const char *host, size_t len)
{
    size_t pl = strlen(pattern);
    if (pl == len && strncasecmp(pattern, host, len) == 0)
        return 2;
    /* "*.example.com" (as nginx): any name that ends in ".example.com" */
    if (pl > 2 && pattern[0] == '*' && pattern[1] == '.' && len > pl - 1 &&
        strncasecmp(pattern + 1, host + len - (pl - 1), pl - 1) == 0)
        return 1;
    return 0;
}

const vc_site_t *vc_config_site_for_host(const vc_config_t *cfg, const char *host, size_t len)
{
    /* Strip a port, but not the colons of a bracketed IPv6 literal. */
    const char *end = host + len;
    if (len && host[0] == '[') {
        const char *rb = memchr(host, ']', len);
        if (rb)
            end = rb + 1;
    } else {
        const char *colon = memchr(host, ':', len);
        if (colon)
            end = colon;
    }
    size_t hlen = (size_t)(end - host);
    if (hlen && host[hlen - 1] == '.')
        hlen--; /* "example.com." is example.com */
    const vc_site_t *fallback = NULL, *wild = NULL;
    size_t wild_len = 0;
    for (size_t i = 0; i < cfg->nsites; i++) {
        const vc_site_t *s = &cfg->sites[i];
        for (size_t h = 0; h < s->nhosts; h++) {
            int m = vc_host_match(s->hosts[h], host, hlen);
            if (m == 2)
                return s;
            if (m == 1 && strlen(s->hosts[h]) > wild_len) {
                wild = s;
                wild_len = strlen(s->hosts[h]);
            }
        }
        if (s->is_default)
            fallback = s;
    }
    return wild ? wild : fallback ? fallback : &cfg->sites[0];
}

char *vc_site_app_dir(const vc_site_t *s)
{
    char *dir;
    if (s->deploy_to) {
        dir = vc_asprintf("%s/current", s->deploy_to);
    } else if (s->root) {
        dir = vc_strdup(s->root);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            dir[--n] = '\0';
        char *base = strrchr(dir, '/');
        if (base && base != dir && (!strcmp(base, "/public") || !strcmp(base, "/web")))
            *base = '\0';
    } else {
        return NULL;
    }
    char *real = realpath(dir, NULL);
    free(dir);
    return real;
}
