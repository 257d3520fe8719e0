/*
 * vc_config, the pools: the `php` block (the pool named "default") and
 * the named ones under `pools`, each with its own user, processes, limits
 * and PHP settings, as php-fpm's pools.
 *
 *   pools: {
 *     shop: { user = "shop"; workers = 8; admin_ini = ["disable_functions=exec"]; };
 *   };
 *
 * A named pool starts from the built-in defaults, not from the php block
 * (as php-fpm's pools share nothing): each says what it needs.
 */
#include "vc_config_internal.h"
#include "vc_lent_quiet.h"
#include "vc_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define P(field) offsetof(vc_pool_t, field)
#define BIG INT64_MAX

const struct spec vc_pool_specs[] = {
    {"php.mode", T_STR, P(mode), 0, 0, "\"classic\" (a request a worker), \"worker\" (a booted script) or \"fork\""},
    {"php.user", T_STR, P(user), 0, 0, "started as root, the pool's PHP runs as this user"},
    {"php.group", T_STR, P(group), 0, 0, "its group (default: the user's)"},
    {"php.workers", T_WORKERS, P(workers), 0, 1024, "workers, or \"auto\": sized from memory"},
    {"php.min_workers", T_INT, P(min_workers), 0, 1024,
     "with max_workers: the fewest a pool that grows and shrinks keeps"},
    {"php.max_workers", T_INT, P(max_workers), 0, 4096, "with min_workers: the most it grows to (0: fixed at workers)"},
    {"php.max_memory", T_SIZE, P(max_memory), 0, BIG, "a worker above this RSS is recycled (0: never)"},
    {"php.max_requests", T_INT, P(max_requests), 0, BIG, "a worker is recycled after this many requests (0: never)"},
    {"php.ini_file", T_STR, P(ini_file), 0, 0, "a php.ini instead of Debian's embed one"},
    {"php.ini", T_LIST, P(ini), 0, 0, "directives after php.ini that a script may change"},
    {"php.admin_ini", T_LIST, P(admin_ini), 0, 0, "directives a script may not change (php_admin_value)"},
    {"php.open_basedir", T_AUTO_BOOL, P(open_basedir), 0, 0, "scripts open only the pool's sites and directories"},
    {"php.private_mounts", T_AUTO_BOOL, P(private_mounts), 0, 0,
     "its own mount namespace: / read-only, the suite's state hidden"},
    {"php.syscall_filter", T_AUTO_BOOL, P(syscall_filter), 0, 0,
     "seccomp: ptrace, mount, BPF, keyrings... fail with EPERM"},
    {"php.open_basedir_dirs", T_LIST, P(open_basedir_dirs), 0, 0, "more directories its scripts may open"},
    {"php.writable_dirs", T_LIST, P(writable_dirs), 0, 0, "more directories its mount namespace keeps writable"},
    {"php.worker_script", T_STR, P(worker_script), 0, 0,
     "worker mode: the script that boots the app and serves requests"},
    {"php.worker_restore", T_BOOL, P(worker_restore), 0, 0,
     "worker mode: globals and statics back to the boot's after each request"},
    {"php.queue_limit", T_INT, P(queue_limit), 0, 1000000, "requests that may wait for a worker; beyond: 503"},
    {"php.queue_timeout", T_DURATION, P(queue_timeout_ms), 1, 3600000, "a request waiting longer for a worker: 504"},
    {"php.pipeline_below", T_DURATION, P(pipeline_below_ms), 0, 60000,
     "while requests wait, a busy worker whose jobs take less gets one more"},
    /* A worker holds one connection at a time: more waits for a worker
     * that serves several in turn (docs/php.md, "Lent connections"). */
    {"php.lend_connections", T_INT, P(lend_connections), 0, VC_LENT_CONNS_MAX,
     "a lent worker serves up to this many HTTP/1.1 connections (0: lend none)"},
    {"php.kill_grace", T_DURATION, P(kill_grace_ms), 0, 3600000,
     "past max_execution_time and this: the worker is killed, 504"},
};
const size_t vc_pool_nspecs = VC_ARRAY_SIZE(vc_pool_specs);

void vc_pool_defaults(vc_pool_t *p, const char *name)
{
    memset(p, 0, sizeof(*p));
    p->name = vc_strdup(name);
    p->mode = vc_strdup("classic");
    p->user = vc_strdup("www-data");
    p->workers = 4;
    /* The wall costs nothing per request where the machine allows it:
     * a mount namespace, and open_basedir only where nothing else
     * separates the pool (cli/walls.c). */
    p->open_basedir = VC_AUTO;
    p->private_mounts = VC_AUTO;
    p->syscall_filter = VC_AUTO;
    p->queue_limit = 1024;
    p->queue_timeout_ms = 30000;
    p->pipeline_below_ms = 2;
    p->kill_grace_ms = 5000;
}

void vc_pool_fini(vc_pool_t *p)
{
    free(p->name);
    free(p->mode);
    free(p->user);
    free(p->group);
    free(p->ini_file);
    vc_config_free_list(&p->ini, &p->nini);
    vc_config_free_list(&p->admin_ini, &p->nadmin_ini);
    vc_config_free_list(&p->open_basedir_dirs, &p->nopen_basedir_dirs);
    vc_config_free_list(&p->writable_dirs, &p->nwritable_dirs);
    free(p->worker_script);
    free(p->source);
}

/* Pool names become process names, directories and socket names. */
static int good_name(const char *name)
{
    if (!*name || strlen(name) > 32 || strcmp(name, "default") == 0)
        return 0;
    for (const char *p = name; *p; p++)
        if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_' && *p != '-')
            return 0;
    return 1;
}

int vc_pools_read(struct ctx *c, vc_config_t *cfg, config_setting_t *group)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *g = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(g);
        int line = (int)config_setting_source_line(g);
        if (!config_setting_is_group(g))
            return vc_config_fail(c, line, "pools.%s: expected a group like { user = \"%s\"; }", name, name);
        if (!good_name(name))
            return vc_config_fail(c, line,
                                  "pools.%s: a pool's name is 1 to 32 of a-z, 0-9, _ and -, and not \"default\" "
                                  "(the php block)",
                                  name);
        for (size_t j = 0; j < cfg->npools; j++)
            if (strcmp(cfg->pools[j].name, name) == 0)
                return vc_config_fail(c, line, "pools.%s is declared twice (first at %s:%d)", name,
                                      cfg->pools[j].source, cfg->pools[j].line);
        cfg->pools = vc_realloc(cfg->pools, (cfg->npools + 1) * sizeof(*cfg->pools));
        vc_pool_t *p = &cfg->pools[cfg->npools++];
        vc_pool_defaults(p, name);
        p->source = vc_strdup(c->file);
        p->line = line;
        /* Inside, the names are those of the php block: "php.workers". */
        int r = vc_config_walk(c, NULL, g, "php", vc_pool_specs, vc_pool_nspecs, p);
        if (r < 0)
            return r;
    }
    return 0;
}

static int validate_one(struct ctx *c, const vc_pool_t *p)
{
    char where[64];
    snprintf(where, sizeof(where), "%s%s", p->source ? "pools." : "php", p->source ? p->name : "");
    int line = p->line;
    if (strcmp(p->mode, "classic") && strcmp(p->mode, "worker") && strcmp(p->mode, "fork"))
        return vc_config_fail(c, line, "%s.mode: \"%s\" is not one of classic, worker, fork", where, p->mode);
    if (strcmp(p->mode, "worker") == 0 && (p->worker_script == NULL || !*p->worker_script))
        return vc_config_fail(c, line, "%s.mode is worker but %s.worker_script is not set", where, where);
    for (size_t i = 0; i < p->nini; i++)
        if (strchr(p->ini[i], '=') == NULL)
            return vc_config_fail(c, line, "%s.ini: \"%s\" is not a name=value directive", where, p->ini[i]);
    for (size_t i = 0; i < p->nadmin_ini; i++)
        if (strchr(p->admin_ini[i], '=') == NULL || p->admin_ini[i][0] == '=')
            return vc_config_fail(c, line, "%s.admin_ini: \"%s\" is not a name=value directive", where,
                                  p->admin_ini[i]);
    for (size_t i = 0; i < p->nopen_basedir_dirs; i++)
        if (p->open_basedir_dirs[i][0] != '/')
            return vc_config_fail(c, line, "%s.open_basedir_dirs: \"%s\" is not an absolute path", where,
                                  p->open_basedir_dirs[i]);
    for (size_t i = 0; i < p->nwritable_dirs; i++)
        if (p->writable_dirs[i][0] != '/')
            return vc_config_fail(c, line, "%s.writable_dirs: \"%s\" is not an absolute path", where,
                                  p->writable_dirs[i]);
    if (p->min_workers > 0 && p->max_workers > 0 && p->min_workers > p->max_workers)
        return vc_config_fail(c, line, "%s.min_workers (%lld) is above %s.max_workers (%lld)", where,
                              (long long)p->min_workers, where, (long long)p->max_workers);
    return 0;
}

int vc_pools_validate(struct ctx *c, vc_config_t *cfg)
{
    c->file = "configuration";
    int r = validate_one(c, &cfg->php);
    for (size_t i = 0; r == 0 && i < cfg->npools; i++) {
        c->file = cfg->pools[i].source;
        r = validate_one(c, &cfg->pools[i]);
    }
    for (size_t i = 0; r == 0 && i < cfg->nsites; i++) {
        vc_site_t *s = &cfg->sites[i];
        if (s->pool && vc_config_pool(cfg, s->pool) == NULL) {
            c->file = s->source;
            r = vc_config_fail(c, s->line, "site \"%s\": pool \"%s\" is not declared under pools", s->name, s->pool);
        }
    }
    return r;
}

/* What PHP opens later, and would run without a word if missing (no
 * php.ini at all is display_errors=1, expose_php=1), or fail on at boot.
 * Asked by the supervisor and configtest only: a daemon running as
 * another user may not be able to read a pool's files, and need not. */
static int check_files(const vc_pool_t *p, const char *source, char *err, size_t errlen)
{
    const char *where = p->source ? "pools." : "php";
    const char *name = p->source ? p->name : "";
    char at[320];
    if (p->line > 0)
        snprintf(at, sizeof(at), "%s:%d", source, p->line);
    else
        snprintf(at, sizeof(at), "%s", source);
    if (p->ini_file && *p->ini_file && access(p->ini_file, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s%s.ini_file: \"%s\" cannot be read: %s", at, where, name, p->ini_file,
                 strerror(errno));
        return -1;
    }
    if (p->worker_script && *p->worker_script && strcmp(p->mode, "classic") != 0 &&
        access(p->worker_script, R_OK) != 0) {
        snprintf(err, errlen, "%s: %s%s.worker_script: \"%s\" cannot be read: %s", at, where, name, p->worker_script,
                 strerror(errno));
        return -1;
    }
    /* The pool's namespace mounts each one: a missing one would stop the
     * pool at start, far from its line. */
    for (size_t i = 0; i < p->nwritable_dirs; i++) {
        struct stat st;
        int rc = stat(p->writable_dirs[i], &st);
        if (rc != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: %s%s.writable_dirs: \"%s\" cannot be used: %s", at, where, name,
                     p->writable_dirs[i], rc != 0 ? strerror(errno) : "not a directory");
            return -1;
        }
    }
    return 0;
}

int vc_config_check_files(const vc_config_t *cfg, char *err, size_t errlen)
{
    if (check_files(&cfg->php, "configuration", err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < cfg->npools; i++)
        if (check_files(&cfg->pools[i], cfg->pools[i].source, err, errlen) < 0)
            return -1;
    return 0;
}

const vc_pool_t *vc_config_pool(const vc_config_t *cfg, const char *name)
{
    if (name == NULL || strcmp(name, "default") == 0)
        return &cfg->php;
    for (size_t i = 0; i < cfg->npools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0)
            return &cfg->pools[i];
    return NULL;
}

int vc_config_select_pool(vc_config_t *cfg, const char *name)
{
    if (name == NULL || strcmp(name, "default") == 0)
        return 0;
    for (size_t i = 0; i < cfg->npools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0) {
            vc_pool_t t = cfg->php;
            cfg->php = cfg->pools[i];
            cfg->pools[i] = t;
            return 0;
        }
    return -1;
}
