/*
 * Where a site's files may be (docs/SECURITY.md, "Paths"): the root
 * supervisor makes and gives away each deployed site's directory, and the
 * front serves each root to anyone, so neither may name a place of the
 * system's or the suite's own. Judged on the path as it resolves (the
 * longest part that exists, through its links), not only as written:
 *
 *  - no root and no deploy_to inside the data directory (keys, the state
 *    store) but for DATA/sites, nor inside the configuration directory,
 *    nor in the system's trees (/etc, /proc, /boot...);
 *  - a deploy_to below one of deploy.allowed_bases (default /srv,
 *    /var/www, /home and DATA/sites), which only the main configuration
 *    file sets: a site file, which the panel writes, holds one site.
 *
 * The same checks run at start and at each reload, since every daemon
 * parses the configuration it is given.
 */
#include "vc_config_internal.h"
#include "vc_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trees of the system's that root never makes a site's directory in. */
static const char *const system_trees[] = {"/etc",    "/proc", "/sys",     "/dev",     "/boot",      "/root",
                                           "/run",    "/bin",  "/sbin",    "/lib",     "/lib32",     "/lib64",
                                           "/libx32", "/usr",  "/var/lib", "/var/log", "/var/spool", "/var/cache"};
/* Those no site is served from. Fewer: Debian serves its packaged
 * applications from /usr/share/APP, /var/lib/APP (MediaWiki) and even
 * /etc/APP (Adminer), so of /etc and /var/lib only the trees themselves
 * are refused, never an application's directory in them. */
static const char *const served_trees[] = {"/proc",    "/sys",      "/dev",     "/boot",    "/root",     "/run",
                                           "/bin",     "/sbin",     "/lib",     "/lib32",   "/lib64",    "/libx32",
                                           "/usr/bin", "/usr/sbin", "/usr/lib", "/var/log", "/var/spool"};
static const char *const served_exactly[] = {"/", "/etc", "/var/lib", "/usr", "/var"};

/* a is b, or a directory above it. */
static int inside(const char *a, const char *b)
{
    size_t n = strlen(a);
    while (n > 1 && a[n - 1] == '/')
        n--;
    return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/' || n == 1);
}

/* The path as the kernel would find it now: the longest part that exists
 * resolved (realpath), the rest appended as written. Owned by the caller. */
char *vc_config_resolve_prefix(const char *path)
{
    char *copy = vc_strdup(path);
    size_t n = strlen(copy);
    for (;;) {
        char *real = realpath(n ? copy : "/", NULL);
        if (real) {
            const char *rest = path + n;
            char *out = *rest ? vc_asprintf("%s%s%s", real, strcmp(real, "/") && *rest != '/' ? "/" : "", rest)
                              : vc_strdup(real);
            free(real);
            free(copy);
            return out;
        }
        char *slash = strrchr(copy, '/');
        if (slash == NULL) {
            free(copy);
            return vc_strdup(path);
        }
        *slash = '\0';
        n = (size_t)(slash - copy);
    }
}

/* The system tree path is in (for a root: may not be served from), or NULL. */
static const char *system_tree(const char *path, int served)
{
    if (!served) {
        for (size_t i = 0; i < VC_ARRAY_SIZE(system_trees); i++)
            if (inside(system_trees[i], path))
                return system_trees[i];
        return NULL;
    }
    for (size_t i = 0; i < VC_ARRAY_SIZE(served_trees); i++)
        if (inside(served_trees[i], path))
            return served_trees[i];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    for (size_t i = 0; i < VC_ARRAY_SIZE(served_exactly); i++)
        if (strlen(served_exactly[i]) == n && strncmp(served_exactly[i], path, n) == 0)
            return served_exactly[i];
    return NULL;
}

/* Why a path (written and resolved) may not hold a site, or NULL. */
static const char *forbidden(const vc_config_t *cfg, const char *data, const char *sites, const char *path, int served,
                             char *buf, size_t len)
{
    if (inside(sites, path) && strlen(path) > strlen(sites))
        return NULL; /* DATA/sites/NAME: the data directory's place for sites */
    const char *tree = system_tree(path, served);
    if (tree) {
        snprintf(buf, len, "it is in %s, the system's", tree);
        return buf;
    }
    if (inside(data, path))
        return "it is in the data directory (the suite's keys and state), where only DATA/sites/NAME may hold sites";
    if (cfg->conf_dir && inside(cfg->conf_dir, path))
        return "it is in the configuration directory";
    return NULL;
}

static int check_site_path(struct ctx *c, const vc_config_t *cfg, const vc_site_t *s, const char *what,
                           const char *path, const char *data, const char *sites)
{
    char *real = vc_config_resolve_prefix(path), buf[160];
    int served = strcmp(what, "root") == 0;
    const char *why = forbidden(cfg, data, sites, path, served, buf, sizeof(buf));
    if (why == NULL)
        why = forbidden(cfg, data, sites, real, served, buf, sizeof(buf));
    int rc = 0;
    if (why)
        rc = vc_config_fail(c, s->line, "site \"%s\": %s \"%s\"%s%s%s: %s", s->name, what, path,
                            strcmp(real, path) ? " (\"" : "", strcmp(real, path) ? real : "",
                            strcmp(real, path) ? "\")" : "", why);
    free(real);
    return rc;
}

/* Where a setting of the main file was set, for its errors. */
static int origin_line(const vc_config_t *cfg, const char *path, struct ctx *c, char *file, size_t flen)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < cfg->norigins; i++)
        if (strncmp(cfg->origins[i], path, n) == 0 && cfg->origins[i][n] == ' ') {
            snprintf(file, flen, "%s", cfg->origins[i] + n + 1);
            char *colon = strrchr(file, ':');
            if (colon) {
                *colon = '\0';
                c->file = file;
                return atoi(colon + 1);
            }
        }
    return 0;
}

static int check_bases(struct ctx *c, const vc_config_t *cfg, const char *sites)
{
    char file[PATH_MAX + 32];
    for (size_t i = 0; i < cfg->ndeploy_bases; i++) {
        const char *b = cfg->deploy_bases[i];
        const char *tree = b[0] == '/' && !inside(sites, b) ? system_tree(b, 0) : NULL;
        if (b[0] != '/' || strcmp(b, "/") == 0 || tree) {
            c->file = "configuration";
            int line = origin_line(cfg, "deploy.allowed_bases", c, file, sizeof(file));
            return vc_config_fail(c, line, "deploy.allowed_bases: \"%s\" %s", b,
                                  tree ? "is in the system's trees" : "is not an absolute path below /");
        }
    }
    return 0;
}

int vc_config_check_paths(struct ctx *c, vc_config_t *cfg)
{
    char *data = vc_config_resolve_prefix(cfg->data_dir);
    char *sites = vc_asprintf("%s/sites", data);
    int rc = check_bases(c, cfg, sites);
    for (size_t i = 0; i < cfg->nsites && rc == 0; i++) {
        const vc_site_t *s = &cfg->sites[i];
        c->file = s->source;
        /* deploy_to first: the directory root would make. */
        if (s->deploy_to)
            rc = check_site_path(c, cfg, s, "deploy_to", s->deploy_to, data, sites);
        char *base = rc == 0 && s->deploy_to ? vc_config_deploy_base(cfg, s->deploy_to) : NULL;
        if (rc == 0 && s->deploy_to && base == NULL) {
            char list[1024] = "";
            for (size_t b = 0; b < cfg->ndeploy_bases; b++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", b ? ", " : "", cfg->deploy_bases[b]);
            rc = vc_config_fail(c, s->line,
                                "site \"%s\": deploy_to \"%s\" is not below one of deploy.allowed_bases (%s): the "
                                "main configuration file may add one",
                                s->name, s->deploy_to, list);
        }
        free(base);
        /* A deployed site's root is DEPLOY_TO/current/..., which moves with
         * each release: judged where it is used (vc-fed's walk, the
         * front's check that it resolves below DEPLOY_TO), not here. */
        if (rc == 0 && s->root && !s->deploy_to)
            rc = check_site_path(c, cfg, s, "root", s->root, data, sites);
    }
    free(sites);
    free(data);
    return rc;
}

char *vc_config_deploy_base(const vc_config_t *cfg, const char *deploy_to)
{
    char *real = vc_config_resolve_prefix(deploy_to), *found = NULL;
    for (size_t i = 0; i < cfg->ndeploy_bases && found == NULL; i++) {
        char *base = vc_config_resolve_prefix(cfg->deploy_bases[i]);
        /* Below it, not the base itself. */
        if (inside(base, real) && strlen(real) > strlen(base) && strcmp(base, "/") != 0)
            found = base;
        else
            free(base);
    }
    free(real);
    return found;
}
